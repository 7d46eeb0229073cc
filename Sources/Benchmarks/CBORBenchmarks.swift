import CBOR

/// Decode and encode throughput for typical CTAP2 responses.
enum CBORBenchmarks {
    static let section = BenchmarkSection(
        name: "cbor", summary: "CBOR decode/encode of a getInfo and a makeCredential response",
        run: run)

    static func run() {
        let inputs: [(String, CBORValue)] = [
            ("getInfo", .map(getInfoResponse)), ("makeCredential", .map(makeCredentialResponse)),
        ]
        for (name, value) in inputs {
            let bytes = CBOREncoder.encode(value)
            let strict = CBORDecoder(options: .ctap2)
            let lenient = CBORDecoder(options: .lenient)
            // Refuse to measure anything that does not round-trip.
            guard (try? strict.decode(bytes)) == value else {
                StandardStreams.out("cbor \(name): input does not round-trip; not measured")
                continue
            }
            Benchmark.throughput("cbor decode \(name)", bytes: bytes.count) {
                (try? strict.decode(bytes))?.mapValue?.count ?? 0
            }
            Benchmark.throughput("cbor decode-lenient \(name)", bytes: bytes.count) {
                (try? lenient.decode(bytes))?.mapValue?.count ?? 0
            }
            Benchmark.throughput("cbor encode \(name)", bytes: bytes.count) {
                CBOREncoder.encode(value).count
            }
        }
    }

    static func publicKeyAlgorithm(_ alg: Int) -> CBORValue {
        .map(["alg": .int(alg), "type": "public-key"])
    }

    /// A getInfo response (CTAP 2.1 §6.4) shaped like a current YubiKey 5's with CTAP 2.2 members, about 600 bytes.
    static var getInfoResponse: CBORMap {
        [
            0x01: ["U2F_V2", "FIDO_2_0", "FIDO_2_1_PRE", "FIDO_2_1"],
            0x02: ["credProtect", "hmac-secret", "largeBlobKey", "credBlob", "minPinLength"],
            0x03: .byteString(
                Array(repeating: 0, count: 6) + [0x2F, 0xC0, 0x57, 0x9F, 0x81, 0x13, 0x47, 0xEA, 0xB1, 0x16]),
            0x04: .map([
                "rk": true, "up": true, "uv": true, "plat": false, "uvToken": true, "alwaysUv": false,
                "credMgmt": true, "authnrCfg": true, "bioEnroll": true, "clientPin": true,
                "largeBlobs": true, "pinUvAuthToken": true, "setMinPINLength": true,
                "makeCredUvNotRqd": true, "credentialMgmtPreview": true, "userVerificationMgmtPreview": true,
            ]),
            0x05: 1200,
            0x06: [2, 1],
            0x07: 8,
            0x08: 128,
            0x09: ["nfc", "usb"],
            0x0A: [
                publicKeyAlgorithm(-7), publicKeyAlgorithm(-8), publicKeyAlgorithm(-35),
                publicKeyAlgorithm(-257),
            ],
            0x0B: 1024,
            0x0C: false,
            0x0D: 4,
            0x0E: 328_707,
            0x0F: 32,
            0x10: 1,
            0x11: 3,
            0x12: 2,
            0x13: .map(["FIDO": 2, "FIPS-CMVP-2": 2, "FIPS-CMVP-2-PHY": 3]),
            0x14: 25,
            0x16: ["packed", "none"],
            0x17: 0,
            0x18: false,
            0x19: .byteString((0..<16).map { UInt8(truncatingIfNeeded: $0 &* 91 &+ 17) }),
            0x1A: ["usb"],
            0x1B: false,
            0x1D: 63,
        ]
    }

    /// A makeCredential response (CTAP 2.1 §6.1) with packed attestation (WebAuthn §8.2) and the
    /// attestation certificate of python-fido2's packed attestation test, about 1 KB.
    static var makeCredentialResponse: CBORMap {
        let credentialID = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let coseKey = CBOREncoder.encode(
            .map([
                1: 2, 3: -7, -1: 1,
                -2: .byteString((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }),
                -3: .byteString((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }),
            ]))
        let aaguid: [UInt8] = [
            0xF8, 0xA0, 0x11, 0xF3, 0x8C, 0x0A, 0x4D, 0x15, 0x80, 0x06, 0x17, 0x11, 0x1F, 0x9E, 0xDC, 0x7D,
        ]
        var authenticatorData = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 1) }  // rpIdHash
        authenticatorData += [0x41, 0x00, 0x00, 0x00, 0x03]  // flags UP|AT, signCount 3
        authenticatorData += aaguid + [0x00, UInt8(credentialID.count)] + credentialID + coseKey
        // A DER ECDSA signature is 70 to 72 bytes.
        let signature: [UInt8] =
            [0x30, 0x45, 0x02, 0x20] + (0..<32).map { UInt8($0 | 0x40) }
            + [0x02, 0x21, 0x00] + (0..<32).map { UInt8($0 | 0x80) }
        return [
            0x01: "packed",
            0x02: .byteString(authenticatorData),
            0x03: .map([
                "alg": -7, "sig": .byteString(signature),
                "x5c": [.byteString(BenchmarkData.bytes(hex: BenchmarkData.packedAttestationCertificateHex))],
            ]),
        ]
    }
}
