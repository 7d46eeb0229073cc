import CBOR
import Foundation
import VirtualAuthenticator

extension FuzzTarget {
    /// The virtual key's CTAP2 command handler, which faces hostile hosts over vpcd, UDP and
    /// uhid: a fresh key per input runs a sequence of commands (2-byte length prefixes). Every
    /// reply starts with a status byte; a success reply's body is a CTAP2 canonical CBOR map.
    static let virtualKey = FuzzTarget("virtual-key", "virtual key CTAP2 command handler") { bytes throws(FuzzPropertyViolation) in
        let key = try freshVirtualKey()
        for command in lengthPrefixedRecords(bytes, limit: 16) {
            let reply = try runBlocking { await key.handleCBOR(command) { _ in } }
            guard let status = reply.first else {
                throw FuzzPropertyViolation(description: "an empty reply to a CTAP2 command")
            }
            if status == 0, reply.count > 1 {
                let body = try? CBORDecoder(options: .ctap2).decode(Array(reply.dropFirst()))
                try expect(body?.mapValue != nil, "a success reply whose body is not a canonical CBOR map")
            }
        }
    }

    /// The virtual key's CTAP1/U2F APDU handler: every reply ends in a status word.
    static let virtualKeyU2F = FuzzTarget("virtual-key-u2f", "virtual key U2F (CTAP1) APDU handler") {
        bytes throws(FuzzPropertyViolation) in
        let key = try freshVirtualKey()
        for apdu in lengthPrefixedRecords(bytes, limit: 16) {
            let reply = try runBlocking { await key.handleU2F(apdu) }
            try expect(reply.count >= 2, "a U2F reply without a status word")
        }
    }
}

/// The state file every fresh key starts from: made once (attestation key and certificate),
/// then opened read-only, so each input starts from the same state and keeps its changes in
/// memory.
private let virtualKeyStateFile: String? = {
    let path = NSTemporaryDirectory() + "securitykey-fuzz-\(getpid())-virtual-key.state"
    guard (try? VirtualKey(configuration: VirtualKey.Configuration(), stateFile: path)) != nil else { return nil }
    return path
}()

/// A virtual key in the fixed starting state.
private func freshVirtualKey() throws(FuzzPropertyViolation) -> VirtualKey {
    guard let path = virtualKeyStateFile,
        let key = try? VirtualKey(configuration: VirtualKey.Configuration(), stateFile: path, stateFileAccess: .readOnly)
    else {
        throw FuzzPropertyViolation(description: "the virtual key does not start")
    }
    return key
}
