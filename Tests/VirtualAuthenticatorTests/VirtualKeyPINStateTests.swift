import CBOR
import CTAP2
import Foundation
import Testing
@testable import VirtualAuthenticator

@Suite("VirtualKey PIN state in the state file")
struct VirtualKeyPINStateTests {
    @Test func pinStateSurvivesARestart() async throws {
        try await VirtualKeyStateTests.withDirectory { directory in
            let path = directory + "/key.state"
            try await {
                let first = try VirtualKey(stateFile: path)
                let platform = Platform(key: first, version: 2)
                #expect(try await platform.setPIN("1234") == Spec.ok)
                #expect(try await platform.token(pin: "0000").status == PINSpec.pinInvalid)
            }()
            // The PIN itself is not in the file, only its hash.
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(!bytes.contains(subsequence: Array("1234".utf8)))

            try await {
                let second = try VirtualKey(stateFile: path)
                let again = Platform(key: second, version: 1)
                #expect(try await again.retries().pin == 7)
                let info = try #require(try await send(second, Spec.getInfo).body)
                #expect(info[4]?.mapValue?["clientPin"] == true)
                #expect(try await again.token(pin: "1234").status == Spec.ok)
                #expect(try await again.retries().pin == 8)
            }()

            // A configured PIN must match the stored one.
            let mismatch = #expect(throws: VirtualKeyError.self) {
                try VirtualKey(configuration: .init(pin: "5678"), stateFile: path)
            }
            #expect(mismatch?.code == .stateMismatch)
            let same = try VirtualKey(configuration: .init(pin: "1234"), stateFile: path)
            #expect(try await Platform(key: same, version: 2).token(pin: "1234").status == Spec.ok)
        }
    }

    @Test func blockedPINAndUVStayBlockedAcrossRestarts() async throws {
        try await VirtualKeyStateTests.withDirectory { directory in
            let path = directory + "/key.state"
            let configuration = VirtualKey.Configuration(
                options: ["rk": true, "up": true, "uv": true], maxUVRetries: 1)
            try await {
                let first = try VirtualKey(
                    configuration: configuration, stateFile: path, userVerification: .mismatch)
                #expect(
                    try await send(first, Spec.getAssertion, getAssertionRequest(options: ["uv": true])).status
                        == PINSpec.uvBlocked)
            }()
            let second = try VirtualKey(configuration: configuration, stateFile: path)
            #expect(try await VirtualKeyPINUVTests.uvRetries(second) == 0)
        }
    }

    @Test func aStateFileWithoutPINFieldsLoads() async throws {
        try await VirtualKeyStateTests.withDirectory { directory in
            let path = directory + "/key.state"
            _ = try VirtualKey(configuration: .init(pin: "1234"), stateFile: path)
            // Strip every field the PIN support added, as a file from before it would lack them.
            var map = try #require(
                try CBORDecoder(options: .ctap2).decode(
                    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
                )
                .mapValue)
            #expect(map["pinHash"] != nil)
            for field in ["pinHash", "pinRetries", "uvRetries", "forcePINChange"] {
                map[.textString(field)] = nil
            }
            try Data(CBOREncoder.encode(.map(map))).write(to: URL(fileURLWithPath: path))
            try await {
                let old = try VirtualKey(stateFile: path)
                let info = try #require(try await send(old, Spec.getInfo).body)
                #expect(info[4]?.mapValue?["clientPin"] == false)
                #expect(try await Platform(key: old, version: 2).retries().pin == 8)
            }()

            // A damaged PIN field is refused.
            map["pinHash"] = .byteString([1, 2, 3])
            try Data(CBOREncoder.encode(.map(map))).write(to: URL(fileURLWithPath: path))
            #expect(throws: VirtualKeyError.self) { try VirtualKey(stateFile: path) }
            map["pinHash"] = nil
            map["pinRetries"] = 9
            try Data(CBOREncoder.encode(.map(map))).write(to: URL(fileURLWithPath: path))
            #expect(throws: VirtualKeyError.self) { try VirtualKey(stateFile: path) }
        }
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard !subsequence.isEmpty, subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains {
            Array(self[$0..<($0 + subsequence.count)]) == subsequence
        }
    }
}
