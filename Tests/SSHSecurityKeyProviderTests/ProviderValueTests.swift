import _SecurityKeyInternals
import Authenticators
import CSSHSecurityKeyAPI
import Foundation
import SSHSecurityKeyProvider
import Testing

/// The provider's values against OpenSSH's ABI (our sk-api.h, written from PROTOCOL.u2f and
/// ssh-sk.c) and OpenSSH's own provider's rules.
struct ProviderValueTests {
    @Test("Constants are sk-api.h's: API version, flags, algorithms, results")
    func constants() {
        #expect(SSHSecurityKeyProvider.apiVersion == UInt32(SSH_SK_VERSION_MAJOR))
        #expect(SSHSecurityKeyProvider.apiVersion & UInt32(SSH_SK_VERSION_MAJOR_MASK) == 0x000a_0000)
        #expect(SSHKeyFlags.userPresenceRequired.rawValue == UInt8(SSH_SK_USER_PRESENCE_REQD))
        #expect(SSHKeyFlags.userVerificationRequired.rawValue == UInt8(SSH_SK_USER_VERIFICATION_REQD))
        #expect(SSHKeyFlags.force.rawValue == UInt8(SSH_SK_FORCE_OPERATION))
        #expect(SSHKeyFlags.residentKey.rawValue == UInt8(SSH_SK_RESIDENT_KEY))
        #expect(SSHKeyAlgorithm.ecdsaP256.rawValue == UInt32(SSH_SK_ECDSA))
        #expect(SSHKeyAlgorithm.ed25519.rawValue == UInt32(SSH_SK_ED25519))
        #expect(SSHSecurityKeyError.Code.general.rawValue == SSH_SK_ERR_GENERAL)
        #expect(SSHSecurityKeyError.Code.unsupported.rawValue == SSH_SK_ERR_UNSUPPORTED)
        #expect(SSHSecurityKeyError.Code.pinRequired.rawValue == SSH_SK_ERR_PIN_REQUIRED)
        #expect(SSHSecurityKeyError.Code.deviceNotFound.rawValue == SSH_SK_ERR_DEVICE_NOT_FOUND)
        #expect(SSHSecurityKeyError.Code.credentialExists.rawValue == SSH_SK_ERR_CREDENTIAL_EXISTS)
    }

    @Test("Structure layouts are those of the C ABI on LP64 (OpenSSH reads them by offset)")
    func layouts() {
        #expect(MemoryLayout<sk_enroll_response>.size == 88)
        #expect(MemoryLayout<sk_enroll_response>.offset(of: \.public_key) == 8)
        #expect(MemoryLayout<sk_enroll_response>.offset(of: \.authdata_len) == 80)
        #expect(MemoryLayout<sk_sign_response>.offset(of: \.counter) == 4)
        #expect(MemoryLayout<sk_sign_response>.offset(of: \.sig_r) == 8)
        #expect(MemoryLayout<sk_sign_response>.size == 40)
        #expect(MemoryLayout<sk_resident_key>.offset(of: \.application) == 16)
        #expect(MemoryLayout<sk_resident_key>.offset(of: \.key) == 24)
        #expect(MemoryLayout<sk_resident_key>.offset(of: \.flags) == 112)
        #expect(MemoryLayout<sk_resident_key>.offset(of: \.user_id_len) == 128)
        #expect(MemoryLayout<sk_option>.offset(of: \.required) == 16)
    }

    @Test("The user option: NUL-padded into a 32-byte user ID, at most 31 bytes, as OpenSSH's strlcpy")
    func userOption() throws {
        let alice = try SSHProviderOptions([("user", "alice", false)], acceptsUser: true)
        #expect(alice.userID == Array("alice".utf8) + [UInt8](repeating: 0, count: 27))
        #expect(SSHProviderOptions().userID == [UInt8](repeating: 0, count: 32))
        let longest = String(repeating: "u", count: 31)
        #expect(try SSHProviderOptions([("user", longest, false)], acceptsUser: true).userID.last == 0)
        #expect(throws: SSHSecurityKeyError(.general, "")) {
            try SSHProviderOptions([("user", longest + "u", false)], acceptsUser: true)
        }
    }

    @Test("Options: device taken; an unknown option ignored unless required; user only when enrolling")
    func options() throws {
        let parsed = try SSHProviderOptions(
            [("device", "udp:127.0.0.1:8111", false), ("colour", "blue", false)], acceptsUser: false)
        #expect(parsed == SSHProviderOptions(device: "udp:127.0.0.1:8111"))
        #expect(throws: SSHSecurityKeyError(.general, "")) {
            try SSHProviderOptions([("colour", "blue", true)], acceptsUser: true)
        }
        #expect(throws: SSHSecurityKeyError(.general, "")) {
            try SSHProviderOptions([("user", "bob", true)], acceptsUser: false)
        }
        #expect(try SSHProviderOptions([("user", "bob", false)], acceptsUser: false).user == nil)
    }

    @Test("Device-layer failures become the results OpenSSH's provider gives for the same status")
    func errorMapping() {
        let cases: [(String, SSHSecurityKeyError.Code)] = [
            ("no-device", .deviceNotFound), ("pin-invalid", .pinRequired), ("pin-required", .pinRequired),
            ("operation-denied", .pinRequired), ("not-interactive", .pinRequired),
            ("unsupported-algorithm", .unsupported), ("unsupported-option", .unsupported),
            ("unsupported-extension", .unsupported), ("pin-blocked", .general), ("timeout", .general),
        ]
        for (code, expected) in cases {
            let error = AuthenticatorError(AuthenticatorError.Code(rawValue: code), "x")
            #expect(SSHSecurityKeyError(error).code == expected, "\(code)")
        }
    }

    @Test("Synchronous calls from many plain threads at once all finish (no cooperative thread blocks)")
    func synchronousCalls() {
        let results = SynchronizedList()
        let group = DispatchGroup()
        for index in 0..<16 {
            group.enter()
            Thread.detachNewThread {
                let value = SynchronousCall.run(orElse: -1) { () async -> Int in
                    try? await Task.sleep(for: .milliseconds(50))
                    return index
                }
                results.append(value)
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(results.sorted == Array(0..<16))
    }
}

private final class SynchronizedList: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int] = []
    func append(_ value: Int) { lock.withLock { values.append(value) } }
    var sorted: [Int] { lock.withLock { values.sorted() } }
}
