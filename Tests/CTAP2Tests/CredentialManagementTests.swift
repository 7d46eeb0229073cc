import CBOR
import Crypto
import Foundation
import Synchronization
import Testing
import Transport

@testable import CTAP2

/// A connection that answers each CTAP2 request from a script keyed by command byte and
/// subCommand (parameter 0x01), and records every request.
final class ScriptedCTAPConnection: AuthenticatorConnection {
    let descriptor = DeviceDescriptor(uri: "scripted-ctap:", transport: .inProcess)
    let capabilities: TransportCapabilities = [.cbor]
    private let replies: @Sendable (_ command: UInt8, _ subCommand: UInt64?) -> [UInt8]
    private let recorded = Mutex<[[UInt8]]>([])

    /// `replies` returns the whole reply (status byte first) for a command and subcommand.
    init(_ replies: @escaping @Sendable (_ command: UInt8, _ subCommand: UInt64?) -> [UInt8]) {
        self.replies = replies
    }

    var requests: [[UInt8]] { recorded.withLock { $0 } }

    func transact(
        _ command: TransportCommand, payload: [UInt8], deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        recorded.withLock { $0.append(payload) }
        guard let byte = payload.first else { return [CTAPStatus.invalidLength.rawValue] }
        let map = payload.count > 1 ? (try? CBORDecoder().decode(Array(payload.dropFirst())))?.mapValue : nil
        return replies(byte, map?[1]?.uint64Value)
    }

    func close() async {}
}

/// What a credential-management key answers, shared by our side and python-fido2's.
enum CredentialManagementScript {
    static let rpIDs = ["example.com", "example.org"]
    static func hash(_ rpID: String) -> [UInt8] { Array(SHA256.hash(data: Array(rpID.utf8))) }
    static let coseKey: CBORValue = .map([
        1: 2, 3: -7, -1: 1, -2: .byteString([UInt8](repeating: 0x21, count: 32)),
        -3: .byteString([UInt8](repeating: 0x22, count: 32)),
    ])
    static let credentialIDs: [[UInt8]] = [
        [UInt8](repeating: 0xC1, count: 48), [UInt8](repeating: 0xC2, count: 48),
    ]

    static func reply(_ map: CBORMap?) -> [UInt8] {
        [0x00] + (map.map { CBOREncoder.encode(.map($0)) } ?? [])
    }

    /// Replies by subcommand: metadata 3 + 22, two RPs, two credentials per RP.
    static func replies(_ subCommand: UInt64?) -> [UInt8] {
        switch subCommand {
        case 1: return reply([1: 3, 2: 22])
        case 2:
            return reply([
                3: .map(["id": .textString(rpIDs[0]), "name": "Example"]), 4: .byteString(hash(rpIDs[0])),
                5: 2,
            ])
        case 3: return reply([3: .map(["id": .textString(rpIDs[1])]), 4: .byteString(hash(rpIDs[1]))])
        case 4:
            return reply([
                6: .map(["id": .byteString([1]), "name": "alice", "displayName": "Alice"]),
                7: .map(["id": .byteString(credentialIDs[0]), "type": "public-key"]), 8: coseKey, 9: 2, 10: 2,
                11: .byteString([UInt8](repeating: 0x0B, count: 32)),
            ])
        case 5:
            return reply([
                6: .map(["id": .byteString([2]), "name": "bob"]),
                7: .map(["id": .byteString(credentialIDs[1]), "type": "public-key"]), 8: coseKey, 10: 1,
            ])
        default: return reply(nil)
        }
    }

    static func info(preview: Bool, version: Int) throws -> AuthenticatorInfo {
        var options: CBORMap = ["clientPin": true, "pinUvAuthToken": true]
        options[preview ? "credentialMgmtPreview" : "credMgmt"] = true
        return try AuthenticatorInfo(map: [
            1: .array(
                (preview ? ["FIDO_2_0", "FIDO_2_1_PRE"] : ["FIDO_2_0", "FIDO_2_1"]).map { .textString($0) }),
            3: .byteString([UInt8](repeating: 0, count: 16)), 4: .map(options), 5: 2048,
            6: .array([.int(version)]),
        ])
    }
}

/// authenticatorCredentialManagement and authenticatorConfig requests against what
/// python-fido2 2.2.1's `CredentialManagement` and `Config` send with the same token, protocol,
/// getInfo and replies: every byte, pinUvAuthParams included, must match.
@Suite struct CredentialManagementPythonTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var version: Int
        var preview: Bool
        var testDescription: String { "protocol \(version)\(preview ? ", preview 0x41" : "")" }
    }
    static let cases = [1, 2].flatMap { v in
        [Case(version: v, preview: false), Case(version: v, preview: true)]
    }

    static func token(_ version: Int, permissions: PINUVAuthTokenPermissions, rpID: String? = nil)
        -> PINUVAuthToken
    {
        PINUVAuthToken(
            token: ClientPINTestsAuthenticator.token,
            pinUVAuthProtocol: version == 2 ? PINUVAuthProtocolTwo() : PINUVAuthProtocolOne(),
            permissions: permissions, rpID: rpID)
    }

    static let user = UserEntity(id: [1], name: "alice@example.com", displayName: "Alice Liddell")

    @Test(arguments: cases)
    func credentialManagementRequestsMatchPythonFIDO2(_ c: Case) async throws {
        let info = try CredentialManagementScript.info(preview: c.preview, version: c.version)
        let connection = ScriptedCTAPConnection { _, sub in CredentialManagementScript.replies(sub) }
        let manager = try CredentialManagement(
            session: CTAP2Session(connection: connection), info: info,
            token: Self.token(c.version, permissions: [.credentialManagement]))
        #expect(manager.command == (c.preview ? .credentialManagementPreview : .credentialManagement))
        let metadata = try await manager.metadata()
        var listed: [[String]] = []
        let parties = try await manager.relyingParties()
        for party in parties {
            listed.append(
                try await manager.credentials(rpIDHash: party.rpIDHash).map { hexString($0.credentialID.id) })
        }
        try await manager.deleteCredential(id: CredentialManagementScript.credentialIDs[0])
        if !c.preview {
            try await manager.updateUserInformation(
                credentialID: CredentialManagementScript.credentialIDs[1], user: Self.user)
        }

        let output = try await runPython(Self.credmanHarness, [try Self.arguments(info: info, c)])
        let python = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        let theirs = try #require(python["requests"] as? [String])
        #expect(connection.requests.map(hexString) == theirs)
        // getCredsMetadata, 2 RPs, 2 × 2 credentials, deleteCredential (and updateUserInformation).
        #expect(theirs.count == (c.preview ? 8 : 9))
        // python-fido2's reading of the same replies.
        #expect(python["metadata"] as? [Int] == [Int(metadata.existingCount), Int(metadata.maxRemaining)])
        #expect(python["rps"] as? [String] == parties.map(\.entity.id))
        #expect(python["creds"] as? [[String]] == listed)
    }

    static func arguments(info: AuthenticatorInfo, _ c: Case) throws -> String {
        let replies = (1...7).map { hexString(CredentialManagementScript.replies(UInt64($0))) }
        let config: [String: Any] = [
            "info": hexString(CBOREncoder.encode(.map(info.fields))), "replies": replies,
            "token": hexString(ClientPINTestsAuthenticator.token), "protocol": c.version,
            "preview": c.preview,
            "credentialIDs": CredentialManagementScript.credentialIDs.map(hexString),
            "user": [
                "id": hexString(user.id), "name": user.name ?? "", "displayName": user.displayName ?? "",
            ],
        ]
        return String(decoding: try JSONSerialization.data(withJSONObject: config), as: UTF8.self)
    }

    static let credmanHarness = #"""
        import json, sys
        from fido2 import cbor
        from fido2.ctap2 import Ctap2
        from fido2.ctap2.pin import PinProtocolV1, PinProtocolV2
        from fido2.ctap2.credman import CredentialManagement

        cfg = json.loads(sys.argv[1])
        info = bytes.fromhex(cfg["info"])
        replies = [bytes.fromhex(r) for r in cfg["replies"]]
        token = bytes.fromhex(cfg["token"])

        class Device:
            capabilities = 0x04
            def __init__(self): self.requests = []
            def call(self, cmd, data, event=None, on_keepalive=None):
                if data[0] == 0x04: return b"\0" + info
                self.requests.append(data.hex())
                return replies[cbor.decode(data[1:])[1] - 1]

        dev = Device()
        proto = PinProtocolV2() if cfg["protocol"] == 2 else PinProtocolV1()
        cm = CredentialManagement(Ctap2(dev), proto, token)
        meta = cm.get_metadata()
        rps = cm.enumerate_rps()
        creds = [[c[7]["id"].hex() for c in cm.enumerate_creds(rp[4])] for rp in rps]
        ids = [bytes.fromhex(i) for i in cfg["credentialIDs"]]
        cm.delete_cred({"type": "public-key", "id": ids[0]})
        if not cfg["preview"]:
            u = cfg["user"]
            cm.update_user_info({"type": "public-key", "id": ids[1]},
                                {"id": bytes.fromhex(u["id"]), "name": u["name"], "displayName": u["displayName"]})
        print(json.dumps({"requests": dev.requests, "metadata": [meta[1], meta[2]],
                          "rps": [rp[3]["id"] for rp in rps], "creds": creds}))
        """#

    @Test(arguments: [1, 2])
    func configRequestsMatchPythonFIDO2(version: Int) async throws {
        let info = try AuthenticatorInfo(map: [
            1: ["FIDO_2_0", "FIDO_2_1"], 3: .byteString([UInt8](repeating: 0, count: 16)),
            4: .map([
                "clientPin": true, "pinUvAuthToken": true, "authnrCfg": true, "ep": false, "alwaysUv": false,
                "setMinPINLength": true,
            ]),
            5: 2048, 6: .array([.int(version)]), 0x0D: 4, 0x10: 2, 0x15: [42],
        ])
        let connection = ScriptedCTAPConnection { _, _ in [0x00] }
        let session = CTAP2Session(connection: connection)
        let config = try AuthenticatorConfig(
            session: session, info: info,
            token: Self.token(version, permissions: [.authenticatorConfiguration]))
        try await config.enableEnterpriseAttestation()
        try await config.toggleAlwaysUV()
        try await config.setMinPINLength(
            8, minPINLengthRPIDs: ["example.com", "example.org"], forceChangePIN: true)
        try await config.setMinPINLength()
        try await config.vendorPrototype(vendorCommandID: 42)
        // A key with neither PIN nor built-in UV takes the command without a token.
        try await AuthenticatorConfig(session: session, info: info, token: nil).toggleAlwaysUV()

        let arguments: [String: Any] = [
            "info": hexString(CBOREncoder.encode(.map(info.fields))),
            "token": hexString(ClientPINTestsAuthenticator.token), "protocol": version,
        ]
        let output = try await runPython(
            Self.configHarness,
            [String(decoding: try JSONSerialization.data(withJSONObject: arguments), as: UTF8.self)])
        let theirs = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String])
        #expect(theirs.count == 6)
        #expect(connection.requests.map(hexString) == theirs)
    }

    static let configHarness = #"""
        import json, sys
        from fido2 import cbor
        from fido2.ctap2 import Ctap2
        from fido2.ctap2.pin import PinProtocolV1, PinProtocolV2
        from fido2.ctap2.config import Config

        cfg = json.loads(sys.argv[1])
        info = bytes.fromhex(cfg["info"])
        token = bytes.fromhex(cfg["token"])

        class Device:
            capabilities = 0x04
            def __init__(self): self.requests = []
            def call(self, cmd, data, event=None, on_keepalive=None):
                if data[0] == 0x04: return b"\0" + info
                self.requests.append(data.hex())
                return b"\0"

        dev = Device()
        ctap = Ctap2(dev)
        proto = PinProtocolV2() if cfg["protocol"] == 2 else PinProtocolV1()
        c = Config(ctap, proto, token)
        c.enable_enterprise_attestation()
        c.toggle_always_uv()
        c.set_min_pin_length(min_pin_length=8, rp_ids=["example.com", "example.org"], force_change_pin=True)
        c.set_min_pin_length()
        c._call(Config.CMD.VENDOR_PROTOTYPE, {1: 42})
        Config(ctap).toggle_always_uv()
        print(json.dumps(dev.requests))
        """#
}
