"""The one exception of the topology DSL.

Every mistake in a topology definition (a bad ``par``, a fields grouping on a field
that does not exist, a cycle, a file that fails to import) raises
:class:`TopologyError` with a message that names the topology and the component,
so that the CLI can print the message alone, without a traceback, and the user
knows which line of which file to fix.
"""

from __future__ import annotations

__all__ = ["TopologyError"]


class TopologyError(ValueError, TypeError):
    """A topology (or one of its components, streams or groupings) is invalid.

    A ValueError and a TypeError both: streamparse's DSL raised one or the other
    for these mistakes, and a project's tests that expect either still pass."""
