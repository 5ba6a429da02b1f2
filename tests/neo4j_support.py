"""A real Neo4j for the tests and benchmarks, without Docker.

`tests/neo4j_server/` holds a tiny Maven project that embeds Neo4j Community 5.26 (Java 17)
and opens Bolt on 127.0.0.1:<port> with authentication off. This module builds it (once: the
build is skipped while pom.xml and the Java source are unchanged), starts it on a free port with
its data in a temporary folder, waits until Bolt answers, and stops it -- or stops and starts it
again on the same port and data folder, which the fault tests use to lose the server mid-run.

    with Neo4jTestServer() as server:
        driver = GraphDatabase.driver(server.uri, auth=None)
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

SERVER_DIR = Path(__file__).resolve().parent / "neo4j_server"
TARGET_DIR = SERVER_DIR / "target"
MAIN_CLASS = "deepresearch.testserver.TestServer"
READY_MARKER = "NEO4J_READY"
# Flags the Neo4j server distribution passes to its JVM and an embedding JVM does not get by
# itself (without java.nio, vector index population is reported to stall).
ADD_OPENS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
)
# The machine is shared: a small heap and the serial collector keep the server's footprint down.
DEFAULT_JVM_OPTIONS = ("-Xmx1g", "-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError")


class Neo4jServerError(RuntimeError):
    """The test server could not be built, started or stopped (the message says why)."""


def _source_fingerprint() -> str:
    digest = hashlib.sha256()
    files = [SERVER_DIR / "pom.xml", *sorted((SERVER_DIR / "src").rglob("*.java"))]
    for path in files:
        digest.update(path.relative_to(SERVER_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build_server(*, force: bool = False) -> float:
    """Build the launcher with Maven unless it is up to date; return the seconds spent.

    Safe to call from several processes at once (a file lock serialises the builds).
    """
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise Neo4jServerError(
                f"'{tool}' is not on PATH: the Neo4j test server needs Java 17 and Maven "
                "(run `make java`, or set NEO4J_URI to use a server of your own)"
            )
    TARGET_DIR.mkdir(exist_ok=True)
    stamp = TARGET_DIR / ".build-fingerprint"
    started = time.monotonic()
    with (TARGET_DIR / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fingerprint = _source_fingerprint()
        if (
            not force
            and stamp.exists()
            and stamp.read_text() == fingerprint
            and (TARGET_DIR / "lib").is_dir()
        ):
            return 0.0
        result = subprocess.run(
            ["mvn", "-q", "-B", "package", "dependency:copy-dependencies"],
            cwd=SERVER_DIR,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            output = (result.stdout + result.stderr)[-4000:]
            raise Neo4jServerError(
                f"building the Neo4j test server failed (mvn exit {result.returncode}):\n{output}"
            )
        stamp.write_text(fingerprint)
    return time.monotonic() - started


def auth_from_env() -> tuple[str, str] | None:
    """Credentials for a server named by NEO4J_URI (NEO4J_USERNAME / NEO4J_PASSWORD); None,
    i.e. no authentication, when no password is set (our test server has auth disabled)."""
    password = os.environ.get("NEO4J_PASSWORD")
    if not password:
        return None
    return os.environ.get("NEO4J_USERNAME", "neo4j"), password


def clear_database(uri: str, database: str | None = None) -> None:
    """Delete every node and relationship (indexes and constraints stay)."""
    from neo4j import GraphDatabase

    database = database or os.environ.get("NEO4J_DATABASE")
    with (
        GraphDatabase.driver(uri, auth=auth_from_env()) as driver,
        driver.session(database=database) as session,
    ):
        # CALL ... IN TRANSACTIONS needs an auto-commit transaction (session.run).
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS").consume()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Neo4jTestServer:
    """One embedded Neo4j process. `stop()` then `start()` keeps the port and the data."""

    def __init__(
        self,
        home: Path | None = None,
        port: int | None = None,
        jvm_options: tuple[str, ...] = DEFAULT_JVM_OPTIONS,
    ) -> None:
        self._owns_home = home is None
        self.home = Path(tempfile.mkdtemp(prefix="neo4j-test-")) if home is None else Path(home)
        self.port = free_port() if port is None else port
        self.jvm_options = jvm_options
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = self.home / "server-output.log"

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _log_tail(self, chars: int = 3000) -> str:
        try:
            return self._log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no output)"

    def start(self, timeout: float = 180.0) -> float:
        """Start the server and wait until Bolt answers; return the seconds it took."""
        if self.running:
            return 0.0
        build_server()
        started = time.monotonic()
        self.home.mkdir(parents=True, exist_ok=True)
        command = [
            "java",
            *self.jvm_options,
            *ADD_OPENS,
            "-cp",
            f"{TARGET_DIR / 'classes'}{os.pathsep}{TARGET_DIR / 'lib' / '*'}",
            MAIN_CLASS,
            str(self.home / "db"),
            str(self.port),
            "--exit-on-stdin-eof",  # the server dies with us even if we are killed
        ]
        log = self._log_path.open("ab")
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT
            )
        finally:
            log.close()
        deadline = started + timeout
        while READY_MARKER not in self._log_tail(100_000):
            if self._process.poll() is not None:
                raise Neo4jServerError(
                    f"the Neo4j test server exited with code {self._process.returncode} "
                    f"before it was ready (port {self.port}):\n{self._log_tail()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise Neo4jServerError(
                    f"the Neo4j test server was not ready within {timeout:.0f}s "
                    f"(port {self.port}):\n{self._log_tail()}"
                )
            time.sleep(0.2)
        self._wait_for_bolt(deadline)
        return time.monotonic() - started

    def _wait_for_bolt(self, deadline: float) -> None:
        from neo4j import GraphDatabase
        from neo4j.exceptions import Neo4jError, ServiceUnavailable

        last_error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                with GraphDatabase.driver(self.uri, auth=None) as driver:
                    driver.verify_connectivity()
                return
            except (ServiceUnavailable, Neo4jError, OSError) as exc:
                last_error = exc
                time.sleep(0.3)
        raise Neo4jServerError(f"Bolt at {self.uri} never answered: {last_error}")

    def stop(self, timeout: float = 60.0, *, kill: bool = False) -> None:
        """Shut the server down and keep the data: SIGTERM (a clean shutdown, SIGKILL after
        `timeout` seconds), or with `kill=True` SIGKILL at once, like a crashed server."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None and kill:
            process.kill()
            process.wait(timeout=30)
        elif process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        if process.stdin is not None:
            process.stdin.close()

    def restart(self, timeout: float = 180.0) -> float:
        self.stop()
        return self.start(timeout=timeout)

    def cleanup(self) -> None:
        """Stop the server and delete its data folder if this object created it (then there
        is nothing to shut down cleanly for: it is killed, which saves ~10 s)."""
        self.stop(kill=self._owns_home)
        if self._owns_home:
            shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> Neo4jTestServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()
