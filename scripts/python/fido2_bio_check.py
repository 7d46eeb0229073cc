#!/usr/bin/env python3
"""Cross-checks a fingerprint authenticator with python-fido2's BioEnrollment/FPBioEnrollment:
sensor info, enrollment one sample at a time (each sample's feedback as python-fido2 decodes it),
enumeration, renaming, cancelling, removal, and getInfo's bioEnroll/uv before and after. The key
must start without a PIN and without fingerprints; its sensor must present, in order, the samples
given with --expect (names as FPBioEnrollment.FEEDBACK has them, e.g. FP_GOOD,FP_TOO_HIGH) and
good ones afterwards.

With --preview it checks a FIDO_2_1_PRE key (userVerificationMgmtPreview, command 0x40) with a
legacy PIN token.

Prints one JSON verdict per step (python-fido2's view of the key) and exits non-zero if any fails.

    .venv/bin/python3 scripts/python/fido2_bio_check.py --udp 8111 [--preview]
"""

from __future__ import annotations

import argparse
import sys

from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.bio import BioEnrollment, FPBioEnrollment
from fido2.ctap2.pin import ClientPin, PinProtocolV2

from fido2_pcsc_check import run_step
import fido2_pcsc_check as base
from fido2_ctap21_check import expect_error, open_device

PIN = "1234"
FEEDBACK = FPBioEnrollment.FEEDBACK
PERM = ClientPin.PERMISSION


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", default="Virtual PCD")
    parser.add_argument("--udp", type=int, default=None, help="UDP port of a CTAPHID-over-UDP key on 127.0.0.1")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--preview", action="store_true")
    args = parser.parse_args()

    dev = open_device(args)
    ctap = Ctap2(dev)
    protocol = PinProtocolV2()
    client_pin = ClientPin(ctap, protocol)
    option = "userVerificationMgmtPreview" if args.preview else "bioEnroll"
    state: dict = {}

    def bio(token=None):
        if token is None:
            token = client_pin.get_pin_token(PIN) if args.preview else client_pin.get_pin_token(PIN, PERM.BIO_ENROLL)
        return FPBioEnrollment(ctap, protocol, token)

    def info():
        i = ctap.get_info()
        return {"versions": i.versions, "bio": i.options.get(option), "uv": i.options.get("uv"),
                "uvModality": i.uv_modality, "supported": BioEnrollment.is_supported(i)}

    def set_pin():
        client_pin.set_pin(PIN)
        return {"clientPin": ctap.get_info().options.get("clientPin")}

    def sensor_info():
        # Unauthenticated: no token at all.
        r = FPBioEnrollment(ctap, protocol, b"").get_fingerprint_sensor_info()
        R = BioEnrollment.RESULT
        return {"modality": r.get(R.MODALITY), "kind": r.get(R.FINGERPRINT_KIND),
                "samplesRequired": r.get(R.MAX_SAMPLES_REQUIRED), "maxName": r.get(R.MAX_TEMPLATE_FRIENDLY_NAME),
                "getModality": bio().get_modality()}

    def enumerate_empty():
        return {"templates": len(bio().enumerate_enrollments())}

    def enroll():
        b = bio()
        template, status, remaining = b.enroll_begin(timeout=5000)
        samples = [{"status": FEEDBACK(status).name, "remaining": remaining}]
        while remaining > 0 and len(samples) < 64:
            status, remaining = b.enroll_capture_next(template, timeout=5000)
            samples.append({"status": FEEDBACK(status).name, "remaining": remaining})
        state["template"] = template
        return {"templateId": template.hex(), "samples": samples}

    def after_enroll():
        return info()

    def rename():
        b = bio()
        b.set_name(state["template"], "left thumb")
        missing = expect_error(CtapError.ERR.INVALID_OPTION, bio().set_name, b"\xff\xfe\xfd", "nobody")
        listed = bio().enumerate_enrollments()
        return {"templates": {k.hex(): v for k, v in listed.items()}, "unknownId": missing}

    def uv_token():
        if args.preview:
            return {"skipped": True}
        token = client_pin.get_uv_token(PERM.GET_ASSERTION, "example.com")
        return {"tokenLength": len(token)}

    def cancel():
        b = bio()
        template, status, remaining = b.enroll_begin()
        b.enroll_cancel()
        after = expect_error(CtapError.ERR.INVALID_PARAMETER, bio().enroll_capture_next, template)
        return {"firstStatus": FEEDBACK(status).name, "remaining": remaining,
                "captureAfterCancel": after, "templates": len(bio().enumerate_enrollments())}

    def remove():
        bio().remove_enrollment(state["template"])
        again = expect_error(CtapError.ERR.INVALID_OPTION, bio().remove_enrollment, state["template"])
        return {"removeAgain": again, "templates": len(bio().enumerate_enrollments()), **info()}

    def no_token():
        # Enrollment without a pinUvAuthParam is refused.
        refused = expect_error(CtapError.ERR.PUAT_REQUIRED, ctap.bio_enrollment,
                               modality=1, sub_cmd=FPBioEnrollment.CMD.ENROLL_BEGIN)
        return {"enrollWithoutToken": refused}

    run_step("getInfo", info)
    run_step("setPIN", set_pin)
    run_step("sensorInfo", sensor_info)
    run_step("enumerateEmpty", enumerate_empty)
    run_step("noToken", no_token)
    if run_step("enroll", enroll) is not None:
        run_step("getInfoEnrolled", after_enroll)
        run_step("rename", rename)
        run_step("uvToken", uv_token)
        run_step("cancel", cancel)
        run_step("remove", remove)
    return 1 if base.failures else 0


if __name__ == "__main__":
    sys.exit(main())
