"""The settings every network transport reads, under its own key prefix."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LinkSettings:
    """Frame sizes, send blocking and reconnect backoff, from
    `storm.messaging.<transport>.*` (defaults in `storm_zmq.config`)."""

    batch_size: int
    max_frame_size: int
    send_timeout: float | None  # seconds; None blocks while the peer applies backpressure
    min_wait: float  # reconnect backoff, seconds
    max_wait: float
    keepalive_secs: int = 0  # idle seconds before TCP keepalive probes; 0: no keepalive

    @classmethod
    def from_conf(cls, conf: dict[str, Any], prefix: str) -> LinkSettings:
        from storm_zmq.config import DEFAULTS

        def get(key: str) -> Any:
            full = prefix + key
            return conf.get(full, DEFAULTS[full])

        timeout_ms = get("send.timeout.ms")
        return cls(
            batch_size=get("transfer.batch.size"),
            max_frame_size=get("max.frame.size"),
            send_timeout=None if timeout_ms < 0 else timeout_ms / 1000,
            min_wait=get("min_wait_ms") / 1000,
            max_wait=get("max_wait_ms") / 1000,
            keepalive_secs=get("keepalive.secs"),
        )

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before reconnect attempt `attempt` (0-based): doubling
        from min_wait, capped at max_wait."""
        return min(self.max_wait, self.min_wait * (2 ** min(attempt, 30)))

    def keepalive_probes(self) -> tuple[int, int, int] | None:
        """(idle, interval, count) for TCP keepalive, or None when it is off.

        Why: a peer whose host vanished (power, network) sends no FIN or RST, and a
        receiving end never writes, so without probes its side of the connection
        stays open for ever, holding a descriptor and, on tcp, whatever part of a
        frame it had read (up to max.frame.size). Storm's Netty transport turns
        SO_KEEPALIVE on for the same reason. `count` probes `interval` apart after
        `keepalive_secs` idle: a dead peer is dropped about twice that long after
        it last sent."""
        if self.keepalive_secs <= 0:
            return None
        count = 4
        return self.keepalive_secs, max(1, self.keepalive_secs // count), count

    def unacked_timeout_ms(self) -> int | None:
        """The longest time (ms) data may stay unacknowledged before the kernel gives
        the connection up (TCP_USER_TIMEOUT; zmq's TCP_MAXRT), or None when keepalive
        is off.

        Why: keepalive probes only an idle connection. One with data in flight to a
        host that vanished is retransmitted to for about 15 minutes (tcp_retries2)
        before the kernel gives up, and all that while the sender's frames to it,
        and its tuples, wait. The same window as keepalive's: a dead peer is given
        up about as soon whether the connection was idle or not."""
        probes = self.keepalive_probes()
        if probes is None:
            return None
        idle, interval, count = probes
        return (idle + interval * count) * 1000

    def send_deadline(self) -> float | None:
        """When (time.monotonic) a send() starting now must give up; None: never."""
        return None if self.send_timeout is None else time.monotonic() + self.send_timeout

    def shortened_timeout(self, deadline: float | None) -> float | None:
        """What is left of a send's `deadline` once it is visibly less than the
        per-frame timeout the socket holds (`send_timeout`), else None. Sockets bound
        each frame's wait; without this, a send of n frames to a slowly draining peer
        could block n timeouts long. May be <= 0: the send is out of time."""
        if deadline is None:
            return None
        remaining = deadline - time.monotonic()
        assert self.send_timeout is not None  # a deadline comes from a timeout
        # (with send_timeout 0 a first frame is still tried: 0 means "do not wait")
        return remaining if remaining < self.send_timeout - 0.001 else None
