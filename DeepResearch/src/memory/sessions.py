"""Sessions and nested contexts. A mixin of MemorySystemClient (the public methods live on
the client).

A nested context is a session of its own with an explicit parent: `create_nested_context`
registers child -> parent in the client's `SessionLinks`. Both calls are synchronous (they
touch only the client's links, no backend) and take effect when called: a merge cannot be left
pending by a missing `await`. Ancestry is never read from a
session's name (anyone can type a name). Merging a child into its parent records that the
parent now sees the child, and copies nothing. A retrieve scoped to a session sees that
session, every descendant merged into it, and with memory.nested.include_ancestors each
ancestor (with what was merged into that ancestor). The links live as long as the client.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from contextlib import contextmanager
from uuid import uuid4

from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.inputs import clean_id

NESTED_SEPARATOR = ":"  # in the names of nested contexts only; no meaning is read from it


def new_session_id() -> str:
    return uuid4().hex


class SessionLinks:
    """child -> parent links of nested contexts, and which children were merged."""

    def __init__(self) -> None:
        self.parents: dict[str, str] = {}
        self.merged: dict[str, list[str]] = {}  # parent -> children merged into it

    def link(self, child: str, parent: str) -> None:
        known = self.parents.get(child)
        if known is not None and known != parent:
            raise MemoryInputError(
                f"session {child!r} is nested in {known!r}, not in {parent!r}; "
                "give each nested context a loop_id of its own"
            )
        if child == parent or child in self.ancestors(parent):
            raise MemoryInputError(
                f"session {child!r} cannot be nested in {parent!r}: it is that session "
                "or one of its ancestors"
            )
        self.parents[child] = parent

    def merge(self, child: str, parent: str) -> None:
        self.link(child, parent)
        children = self.merged.setdefault(parent, [])
        if child not in children:
            children.append(child)

    def ancestors(self, session: str) -> list[str]:
        """Parent first, then its parent, and so on."""
        out: list[str] = []
        while session in self.parents:
            session = self.parents[session]
            out.append(session)
        return out

    def merged_into(self, session: str) -> list[str]:
        """`session` and every descendant merged into it (through merged sessions only)."""
        out, todo = [session], [session]
        while todo:
            for child in self.merged.get(todo.pop(), ()):
                out.append(child)
                todo.append(child)
        return out

    def scope(self, session: str, include_ancestors: bool) -> tuple[str, ...]:
        tops = [session, *self.ancestors(session)] if include_ancestors else [session]
        return tuple(dict.fromkeys(s for top in tops for s in self.merged_into(top)))


class Merged:
    """What merge_nested_context returns: the merge is done when the call returns. Code written
    `await client.merge_nested_context(...)` keeps working: awaiting it does nothing more (and
gives the same Merged)."""

    __slots__ = ("child", "parent")

    def __init__(self, child: str, parent: str) -> None:
        self.child = child
        self.parent = parent

    def __await__(self) -> Generator[None, None, Merged]:
        yield from ()
        return self

    def __repr__(self) -> str:
        return f"Merged(child={self.child!r}, parent={self.parent!r})"


class NestedContexts:
    """create_nested_context / merge_nested_context / nested_context of MemorySystemClient;
    all they need of the client is its links."""

    _links: SessionLinks

    def create_nested_context(
        self, parent_session_id: str, loop_id: str
    ) -> str:
        """A session nested in `parent_session_id`, named '<parent>:<loop_id>'. It sees its own
        memories and, with memory.nested.include_ancestors, its ancestors'; its parent sees
        it once it is merged (`merge_nested_context`)."""
        parent = clean_id(parent_session_id, "parent_session_id")
        loop = clean_id(loop_id, "loop_id")
        child = f"{parent}{NESTED_SEPARATOR}{loop}"
        self._links.link(child, parent)
        return child

    def merge_nested_context(
        self, child_session_id: str, parent_session_id: str
    ) -> Merged:
        """From now on retrieves scoped to the parent (or to a session that sees the parent)
        also see the child's memories and what was merged into the child. Nothing is copied
        or written; merging twice changes nothing. Done on return, awaited or not."""
        child = clean_id(child_session_id, "child_session_id")
        parent = clean_id(parent_session_id, "parent_session_id")
        self._links.merge(child, parent)
        return Merged(child, parent)

    @contextmanager
    def nested_context(
        self, parent_session_id: str, loop_id: str
    ) -> Iterator[str]:
        """`with client.nested_context(parent, loop_id) as session:` the nested session
        (create_nested_context), merged into the parent when the block ends, also when it
        raises (what the child stored is kept and seen by the parent)."""
        child = self.create_nested_context(parent_session_id, loop_id)
        try:
            yield child
        finally:
            self.merge_nested_context(child, parent_session_id)
