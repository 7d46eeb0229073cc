"""Builds a CTAPHID capture with python-fido2's own framing (CtapHidDevice writes the requests;
responses are framed here by the CTAP 2.1 §11.2.4 rules) and prints it with the messages it holds.

usage: ctaphid_capture.py INFO_HEX MC_RESP_HEX
"""
import json
import struct
import sys

from fido2.ctap2 import Info
from fido2 import cbor
from fido2.hid import CtapHidDevice, CTAPHID
from fido2.hid.base import HidDescriptor

CID = 0x0A0B0C0D


def frame(cid, cmd, payload, size=64):
    out = [struct.pack(">IBH", cid, 0x80 | cmd, len(payload)) + payload[: size - 7]]
    rest, seq = payload[size - 7 :], 0
    while rest:
        out.append(struct.pack(">IB", cid, seq) + rest[: size - 5])
        rest, seq = rest[size - 5 :], seq + 1
    return [p.ljust(size, b"\0") for p in out]


class Capture:
    def __init__(self, replies):
        self.reports, self.replies, self.queue = [], list(replies), []

    def write_packet(self, data):
        data = bytes(data)
        self.reports.append(data)
        if data[4] == 0x80 | CTAPHID.INIT:
            nonce = data[7:15]
            self.queue += frame(0xFFFFFFFF, CTAPHID.INIT, nonce + struct.pack(">IBBBBB", CID, 2, 1, 0, 0, 0x05))

    def read_packet(self):
        if not self.queue:
            self.queue += self.replies.pop(0)
        packet = self.queue.pop(0)
        self.reports.append(packet)
        return packet

    def close(self):
        pass


info, mc_resp = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
mc_request = b"\x01" + cbor.encode({1: b"\x11" * 32, 2: {"id": "example.org"}, 3: {"id": b"\x22" * 64, "name": "alice" * 20}, 4: [{"type": "public-key", "alg": -7}]})
replies = [
    frame(CID, CTAPHID.KEEPALIVE, b"\x02") + frame(CID, CTAPHID.CBOR, b"\x00" + info),
    frame(CID, CTAPHID.CBOR, b"\x00" + mc_resp),
]
capture = Capture(replies)
device = CtapHidDevice(HidDescriptor("capture", 0x1050, 0x0407, 64, 64, "capture", None), capture)
assert device.call(CTAPHID.CBOR, b"\x04") == b"\x00" + info
assert device.call(CTAPHID.CBOR, mc_request) == b"\x00" + mc_resp
init_request = capture.reports[0][7:15]
init_reply = capture.reports[1][7:24]
messages = [
    (0xFFFFFFFF, "CTAPHID_INIT", init_request), (0xFFFFFFFF, "CTAPHID_INIT", init_reply),
    (CID, "CTAPHID_CBOR", b"\x04"), (CID, "CTAPHID_KEEPALIVE", b"\x02"), (CID, "CTAPHID_CBOR", b"\x00" + info),
    (CID, "CTAPHID_CBOR", mc_request), (CID, "CTAPHID_CBOR", b"\x00" + mc_resp),
]
print(json.dumps({
    "capture": "\n".join(r.hex() for r in capture.reports),
    "messages": [{"channel": "%08x" % c, "command": n, "payload": p.hex()} for c, n, p in messages],
    "aaguid": str(Info.from_dict(cbor.decode(info)).aaguid),
}))
