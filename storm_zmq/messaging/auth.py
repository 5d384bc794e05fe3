"""Per-topology secrets and the tcp transport's challenge-response, as pure logic.

A topology gets one `TopologySecrets` when it is submitted (or per `storm-zmq run`):
a CURVE key pair for the zmq transport (`storm.messaging.zmq.curve`) and a random
HMAC key for the tcp transport (`storm.messaging.tcp.authentication`). Every worker
of the topology holds the same secrets, so "a peer of this topology" means "a peer
that holds the topology's secret": the zmq server admits only clients whose CURVE
public key is the topology's (and CURVE makes a client prove it holds the matching
secret key), and a tcp connection carries frames only after both ends proved they
hold the HMAC key.

The tcp handshake (Storm's SASL DIGEST idea, mutual, one round trip and a byte)::

    client -> server   HELLO    = MAGIC (8) || client nonce (32)
    server -> client   CHALLENGE = server nonce (32) || HMAC(K, "server" || Nc || Ns || id)
    client -> server   RESPONSE = HMAC(K, "client" || Nc || Ns || id)
    server -> client   ACCEPT   = b"\\x01"            (then the client sends frames)

Both nonces are fresh per connection, so a recorded RESPONSE is worthless on the
next connection (replay); the role labels keep a server's proof from being
reflected as a client's; the storm id binds the proof to the topology. Every message
has a fixed size, so a reader never reads more than the handshake needs, and each
side bounds the handshake's time (`HANDSHAKE_TIMEOUT`). MACs are compared in
constant time (`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from storm_zmq.messaging.base import TransportError

__all__ = [
    "ACCEPT",
    "CHALLENGE_SIZE",
    "HANDSHAKE_TIMEOUT",
    "HELLO_SIZE",
    "MAGIC",
    "NONCE_SIZE",
    "RESPONSE_SIZE",
    "AuthError",
    "ClientHandshake",
    "ServerHandshake",
    "TopologySecrets",
    "coerce_secrets",
]

MAGIC = b"SZMQAUT1"
NONCE_SIZE = 32
MAC_SIZE = 32  # SHA-256
HELLO_SIZE = len(MAGIC) + NONCE_SIZE
CHALLENGE_SIZE = NONCE_SIZE + MAC_SIZE
RESPONSE_SIZE = MAC_SIZE
ACCEPT = b"\x01"
#: Seconds either side gives the whole handshake before refusing the connection.
HANDSHAKE_TIMEOUT = 5.0
HMAC_KEY_SIZE = 32

_Z85_KEY = re.compile(r"^[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}$")
_HEX_KEY = re.compile(r"^[0-9a-f]{64}$")


class AuthError(TransportError):
    """A peer failed authentication (or the secrets are unusable); the message says
    which step and why, never any secret."""


@dataclass(frozen=True)
class TopologySecrets:
    """The secrets of one topology: a CURVE key pair (Z85 text, 40 characters each)
    and a 32-byte HMAC key. `repr` never shows them."""

    curve_public: bytes
    curve_secret: bytes
    hmac_key: bytes

    @classmethod
    def generate(cls) -> TopologySecrets:
        """Fresh secrets: `zmq.curve_keypair()` and 32 bytes from `os.urandom`."""
        import zmq

        public, secret = zmq.curve_keypair()
        return cls(public, secret, os.urandom(HMAC_KEY_SIZE))

    def to_dict(self) -> dict[str, str]:
        """JSON-safe form, for ZooKeeper, a launch file or a worker spec."""
        return {
            "curve_public": self.curve_public.decode("ascii"),
            "curve_secret": self.curve_secret.decode("ascii"),
            "hmac_key": self.hmac_key.hex(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TopologySecrets:
        """Inverse of `to_dict`; raises `AuthError` naming the missing or bad field."""
        if not isinstance(data, Mapping):
            raise AuthError(f"topology secrets must be a mapping, got {type(data).__name__}")
        fields = {}
        for name, pattern in (("curve_public", _Z85_KEY), ("curve_secret", _Z85_KEY),
                              ("hmac_key", _HEX_KEY)):
            value = data.get(name)
            if not isinstance(value, str) or not pattern.match(value):
                raise AuthError(f"topology secrets: field {name!r} is missing or malformed")
            fields[name] = value
        return cls(fields["curve_public"].encode("ascii"),
                   fields["curve_secret"].encode("ascii"),
                   bytes.fromhex(fields["hmac_key"]))

    def __repr__(self) -> str:
        return f"TopologySecrets(curve_public={self.curve_public.decode('ascii')!r}, ...)"


def coerce_secrets(secrets: TopologySecrets | Mapping[str, Any] | None) -> TopologySecrets | None:
    """Accept secrets as the object or its `to_dict()` form (what crosses a process
    boundary)."""
    if secrets is None or isinstance(secrets, TopologySecrets):
        return secrets
    return TopologySecrets.from_dict(secrets)


def _mac(key: bytes, role: bytes, client_nonce: bytes, server_nonce: bytes,
         storm_id: str) -> bytes:
    message = b"%s\x00%s%s%s" % (role, client_nonce, server_nonce, storm_id.encode("utf-8"))
    return hmac.new(key, message, hashlib.sha256).digest()


class ClientHandshake:
    """The connecting side. `hello()`, then `answer(challenge)` returns the response
    to send (raising `AuthError` when the server does not hold the key), then
    `accepted(reply)` checks the server's verdict."""

    def __init__(self, key: bytes, storm_id: str, nonce: bytes | None = None) -> None:
        self._key = key
        self._storm_id = storm_id
        self._nonce = nonce if nonce is not None else os.urandom(NONCE_SIZE)
        self._step = 0

    def hello(self) -> bytes:
        if self._step != 0:
            raise AuthError("handshake out of order: hello() twice")
        self._step = 1
        return MAGIC + self._nonce

    def answer(self, challenge: bytes) -> bytes:
        if self._step != 1:
            raise AuthError("handshake out of order: answer() before hello()")
        self._step = 2
        if len(challenge) != CHALLENGE_SIZE:
            raise AuthError(f"challenge of {len(challenge)} bytes, expected {CHALLENGE_SIZE}")
        server_nonce, proof = challenge[:NONCE_SIZE], challenge[NONCE_SIZE:]
        if server_nonce == self._nonce:
            raise AuthError("the server echoed our nonce (a reflection)")
        expected = _mac(self._key, b"server", self._nonce, server_nonce, self._storm_id)
        if not hmac.compare_digest(proof, expected):
            raise AuthError("the server does not hold the topology's secret")
        return _mac(self._key, b"client", self._nonce, server_nonce, self._storm_id)

    def accepted(self, reply: bytes) -> None:
        if self._step != 2:
            raise AuthError("handshake out of order: accepted() before answer()")
        self._step = 3
        if reply != ACCEPT:
            raise AuthError("the server refused our proof")


class ServerHandshake:
    """The accepting side, fed by a non-blocking reader: `need` is how many bytes the
    next step reads (never more, so frame bytes stay in the socket), `feed(data)`
    takes exactly that many and returns what to send back. `done` once the client
    proved it holds the key; any failure raises `AuthError`."""

    def __init__(self, key: bytes, storm_id: str, nonce: bytes | None = None) -> None:
        self._key = key
        self._storm_id = storm_id
        self._nonce = nonce if nonce is not None else os.urandom(NONCE_SIZE)
        self._client_nonce = b""
        self.need = HELLO_SIZE
        self.done = False

    def feed(self, data: bytes) -> bytes:
        if self.done:
            raise AuthError("handshake already finished")
        if len(data) != self.need:
            raise AuthError(f"handshake message of {len(data)} bytes, expected {self.need}")
        if not self._client_nonce:
            if data[:len(MAGIC)] != MAGIC:
                raise AuthError("the peer did not start the authentication handshake")
            nonce = data[len(MAGIC):]
            if nonce == self._nonce:
                raise AuthError("the client sent our own nonce (a reflection)")
            self._client_nonce = nonce
            self.need = RESPONSE_SIZE
            return self._nonce + _mac(self._key, b"server", nonce, self._nonce, self._storm_id)
        expected = _mac(self._key, b"client", self._client_nonce, self._nonce, self._storm_id)
        if not hmac.compare_digest(data, expected):
            raise AuthError("the peer does not hold the topology's secret")
        self.done = True
        self.need = 0
        return ACCEPT
