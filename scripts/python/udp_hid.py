"""CTAPHID-over-UDP for python-fido2: the helper scripts' way to reach a virtual key served with
`securitykey virtual serve --udp` (one 64-byte report per datagram, on 127.0.0.1).

Imported by the checks in this directory, by the CLI tests' helper scripts (PythonFido2.runJSON
puts this directory on PYTHONPATH) and by the virtual authenticator tests' inline scripts
(runPythonFIDO2 puts it on sys.path).
"""

import base64
import socket

from fido2.hid import CtapHidDevice
from fido2.hid.base import CtapHidConnection, HidDescriptor


class UdpConnection(CtapHidConnection):
    """CTAPHID reports as UDP datagrams, as firmware emulators serve them."""

    def __init__(self, port, host="127.0.0.1", timeout=30):
        self.target = (host, port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(timeout)

    def write_packet(self, data):
        self.sock.sendto(data, self.target)

    def read_packet(self):
        return self.sock.recv(64)

    def close(self):
        self.sock.close()


def udp_device(port, timeout=30):
    """A python-fido2 CTAPHID device for the key on UDP `port` of 127.0.0.1; each read waits at
    most `timeout` seconds."""
    return CtapHidDevice(HidDescriptor("udp", 0, 0, 64, 64, None, None), UdpConnection(port, timeout=timeout))


def b64url(data):
    return base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode()
