import CBOR
import CTAP2
import Crypto
import VirtualAuthenticator

extension FuzzTarget {
    /// Authenticator extension outputs (CTAP 2.2 §12) and the hmac-secret output decryption.
    ///
    /// The input is read as the extensions map of authenticator data (the ED flag set, so
    /// ``AuthenticatorData/extensionOutputs()`` parses it after the authData parser), as a
    /// decrypted hmac-secret output for one and two salts, and as an encrypted output under a
    /// real shared secret of each PIN/UV auth protocol (from a virtual key's getKeyAgreement).
    /// A 32- or 64-byte prefix of the input, encrypted with that secret, decrypts to the same
    /// outputs; an output of the wrong length is a typed error.
    static let extensions = FuzzTarget(
        "extensions", "authData extension outputs and hmac-secret output decryption"
    ) {
        bytes throws(FuzzPropertyViolation) in
        try expect(hmacSharedSecrets.count == 2, "no shared secret was agreed with the virtual key")
        let flags: AuthenticatorData.Flags = [.userPresent, .extensionData]
        if let authData = try? AuthenticatorData(
            bytes: [UInt8](repeating: 0x11, count: 32) + [flags.rawValue, 0, 0, 0, 1] + bytes),
            let outputs = try? authData.extensionOutputs()
        {
            try expect(!outputs.description.isEmpty, "extension outputs without a description")
            let description = outputs.description
            try expect(
                outputs.hmacSecretEncrypted == nil
                    || !description.contains("\(outputs.hmacSecretEncrypted ?? [])"),
                "the description shows the hmac-secret ciphertext")
            if let map = authData.extensions {
                try expect(
                    (try? AuthenticatorExtensionOutputs(map: map)) == outputs,
                    "extension outputs parse differently twice")
            }
        }
        _ = try? AuthenticatorExtensionOutputs(
            map: (try? CBORDecoder(options: .ctap2).decode(bytes))?.mapValue ?? [:])
        for saltCount in 1...2 {
            if let output = try? HMACSecretOutput(decrypted: bytes, saltCount: saltCount) {
                try expect(
                    bytes.count == 32 * saltCount, "an hmac-secret output of \(bytes.count) bytes parsed")
                try expect(
                    (output.output2 == nil) == (saltCount == 1), "an hmac-secret output with the wrong count")
                try expect(
                    !output.description.contains("\(output.output1)"), "the description shows the output")
                try expect(
                    !String(reflecting: output).contains("\(output.output1)")
                        && Mirror(reflecting: output).children.isEmpty,
                    "the debug description or the mirror shows the output")
            }
        }
        // Salts of the lengths the input's first two bytes give: only 32-byte salts encrypt.
        if bytes.count >= 2, let secret = hmacSharedSecrets.first {
            let salt1 = Array(bytes.dropFirst(2).prefix(Int(bytes[0] & 0x3F)))
            let salt2 = bytes[1] & 0x80 == 0 ? nil : Array(bytes.dropFirst(2).prefix(Int(bytes[1] & 0x3F)))
            let input = try? HMACSecretInput(salt1: salt1, salt2: salt2, sharedSecret: secret)
            try expect(
                (input != nil)
                    == (salt1.count == HMACSecretInput.saltLength
                        && (salt2?.count ?? HMACSecretInput.saltLength) == HMACSecretInput.saltLength),
                "salts of \(salt1.count) and \(salt2?.count ?? 0) bytes did not do what the length rule says")
        }
        for secret in hmacSharedSecrets {
            for salts in [1, 2] {
                let salt = [UInt8](repeating: 0x53, count: HMACSecretInput.saltLength)
                guard
                    let input = try? HMACSecretInput(
                        salt1: salt, salt2: salts == 2 ? salt : nil, sharedSecret: secret)
                else { throw FuzzPropertyViolation(description: "an hmac-secret input does not encrypt") }
                try expect(
                    !input.cbor.isEmpty && !input.description.isEmpty, "an hmac-secret input without a map")
                if let output = try? HMACSecretOutput(encrypted: bytes, input: input, sharedSecret: secret) {
                    try expect(
                        output.output1.count == 32, "a decrypted hmac-secret output of the wrong length")
                }
                let plain = Array(bytes.prefix(32 * salts))
                guard plain.count == 32 * salts, let encrypted = try? secret.encrypt(plain) else { continue }
                var output = try? HMACSecretOutput(encrypted: encrypted, input: input, sharedSecret: secret)
                try expect(
                    output.map { $0.output1 + ($0.output2 ?? []) } == plain,
                    "an encrypted hmac-secret output does not decrypt to itself")
                output?.wipe()
                try expect(
                    output.map { $0.output1.allSatisfy { $0 == 0 } } ?? false, "wipe() left the output")
            }
        }
    }
}

/// A shared secret of each PIN/UV auth protocol, agreed with a virtual key once per process.
private let hmacSharedSecrets: [PINUVSharedSecret] = {
    guard let key = try? freshVirtualKey(.ctap21) else { return [] }
    let secrets = try? runBlocking { () async -> [PINUVSharedSecret] in
        let session = CTAP2Session(connection: InProcessConnection(handler: key, uri: "fuzz:extensions"))
        guard let info = try? await session.getInfo() else { return [] }
        var secrets: [PINUVSharedSecret] = []
        for proto in [PINUVAuthProtocolOne() as any PINUVAuthProtocol, PINUVAuthProtocolTwo()] {
            guard let pin = try? ClientPIN(session: session, info: info, pinUVAuthProtocol: proto),
                let secret = try? await pin.sharedSecret()
            else { continue }
            secrets.append(secret)
        }
        return secrets
    }
    return secrets ?? []
}()
