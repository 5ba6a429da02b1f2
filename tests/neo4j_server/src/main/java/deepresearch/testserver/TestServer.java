package deepresearch.testserver;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

/**
 * Runs an embedded Neo4j Community with only the Bolt connector, for the Python test suite.
 *
 * <p>Usage: {@code TestServer <home-dir> <port> [--exit-on-stdin-eof]}. Bolt listens on
 * 127.0.0.1:port with authentication disabled; the store lives under home-dir, so stopping and
 * starting again with the same arguments keeps the data. When the database answers, one line
 * {@code NEO4J_READY bolt://127.0.0.1:<port>} is printed. SIGTERM (or, with the flag, the end
 * of standard input, i.e. the parent process went away) shuts the database down cleanly.
 */
public final class TestServer {
    private TestServer() {}

    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: TestServer <home-dir> <port> [--exit-on-stdin-eof]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        int port;
        try {
            port = Integer.parseInt(args[1]);
        } catch (NumberFormatException e) {
            System.err.println("port must be an integer, got '" + args[1] + "'");
            System.exit(2);
            return;
        }
        boolean exitOnEof = args.length > 2 && "--exit-on-stdin-eof".equals(args[2]);

        DatabaseManagementService service = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(64))
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .build();

        AtomicBoolean stopped = new AtomicBoolean(false);
        Runnable stop = () -> {
            if (stopped.compareAndSet(false, true)) {
                service.shutdown();
            }
        };
        Runtime.getRuntime().addShutdownHook(new Thread(stop, "neo4j-test-server-shutdown"));

        // Touch the default database so "ready" means "answers queries", not just "bound".
        service.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME).executeTransactionally("RETURN 1");
        System.out.println("NEO4J_READY bolt://127.0.0.1:" + port);
        System.out.flush();

        if (exitOnEof) {
            InputStream in = System.in;
            byte[] buffer = new byte[256];
            while (in.read(buffer) >= 0) {
                // nothing to do: we only wait for the parent to close the pipe
            }
            System.exit(0); // runs the shutdown hook
        }
        // Otherwise the Neo4j threads keep the JVM alive until it is signalled.
    }
}
