import Authenticators
import CBOR
import CTAP2
import Foundation
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// The stored persistent tokens (CTAP 2.2 pcmr) through the device layer, against an in-process
/// virtual key with the feature: saved with the PIN once, found again by the key's identifier,
/// used for reading without a PIN, refused after a PIN change, and a damaged file refused.
@Suite struct PersistentTokenStoreTests {
    static func key() throws -> VirtualKey {
        var configuration = VirtualKey.Configuration.ctap21(pin: "1234")
        configuration.persistentPINUVAuthToken = true
        return try VirtualKey(configuration: configuration)
    }

    static func open(_ key: VirtualKey, uri: String = "test:key") async throws -> Authenticator {
        try await Authenticator.open(InProcessConnection(handler: key, uri: uri), deadline: .after(.seconds(5)))
    }

    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("token-store-\(UUID())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func savedOnceThenFoundAndUsedWithoutAPIN() async throws {
        let work = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: work) }
        let store = PersistentTokenStore(path: work.appendingPathComponent("state/securitykey/tokens.cbor").path)
        let key = try Self.key()
        let authenticator = try await Self.open(key)
        let interaction = RecordingInteraction(pins: ["1234"])
        let record = try await authenticator.savePersistentToken(
            in: store, savedAt: 1_700_000_000, interaction: interaction, deadline: .after(.seconds(5)))
        #expect(interaction.prompts.withLock { $0.count } == 1, "the PIN is asked once")
        #expect(record.identifier?.count == 16)
        #expect(!"\(record)".contains("token:"))
        let attributes = try FileManager.default.attributesOfItem(atPath: store.path)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        let directory = try FileManager.default.attributesOfItem(atPath: work.appendingPathComponent("state/securitykey").path)
        #expect(directory[.posixPermissions] as? Int == 0o700)
        #expect(try store.records() == [record])

        // Another open of the same key (a new getInfo, a fresh IV) finds it by its identifier.
        let again = try await Self.open(key, uri: "test:elsewhere")
        guard case .found(let found, let identifier) = try await again.storedToken(in: store) else {
            Issue.record("the stored token was not found")
            return
        }
        #expect(found == record && identifier == record.identifier)
        let token = found.pinUVAuthToken()
        defer { token.wipe() }
        let metadata = try await again.credentialMetadata(storedToken: token, interaction: nil, deadline: .after(.seconds(5)))
        #expect(metadata.existingCount == 0)

        // The fleet reports the identifier of a key whose token is stored.
        let inventory = FleetInventory(
            directory: AuthenticatorDirectory(discoveries: [ScriptedDiscovery([("pcmr", key)])]), tokenStore: store)
        let reports = await inventory.inspect(await inventory.devices().devices, overall: .after(.seconds(10)))
        #expect(reports.map(\.identifier) == [record.identifier])

        // After a PIN change the record no longer fits (stale, through the same URI) and the
        // key refuses the token; no PIN attempt is spent.
        try await again.changePIN(from: "1234", to: "5678", deadline: .after(.seconds(5)))
        guard case .stale(let stale) = try await Self.open(key, uri: record.deviceURI).storedToken(in: store) else {
            Issue.record("the record should be stale")
            return
        }
        #expect(stale == [record])
        let refused = await #expect(throws: AuthenticatorError.self) {
            _ = try await again.credentialMetadata(storedToken: token, interaction: nil, deadline: .after(.seconds(5)))
        }
        #expect(refused?.code == .storedTokenInvalid)
        #expect(try await again.pinRetries(deadline: .after(.seconds(5))).retries == 8)
        #expect(try store.remove { _ in true } == 1)
        #expect(!FileManager.default.fileExists(atPath: store.path))
    }

    /// What `info` shows beside getInfo: the virtual key's retries, and with a stored token its
    /// identifier (the one the record was saved with) and credential store state; then
    /// `forget` removes the record.
    @Test func detailsShowRetriesAndWhatTheStoredTokenDecrypts() async throws {
        let work = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: work) }
        let key = try Self.key()
        let authenticator = try await Self.open(key)
        let store = PersistentTokenStore(path: work.appendingPathComponent("tokens.cbor").path)
        let before = await authenticator.details(tokenStore: store, deadline: .after(.seconds(5)))
        #expect(before.pinRetries?.retries == 8)
        #expect(before.uvRetries == nil, "the key has no built-in UV")
        #expect(!before.storedToken && before.identifier == nil && before.credentialStoreState == nil)

        let record = try await authenticator.savePersistentToken(
            in: store, savedAt: 1_700_000_000, interaction: RecordingInteraction(pins: ["1234"]),
            deadline: .after(.seconds(5)))
        let events = Mutex<[String]>([])
        let after = try await Self.open(key, uri: "test:again").details(
            tokenStore: store, events: { event in events.withLock { $0.append("\(event)") } },
            deadline: .after(.seconds(5)))
        #expect(after.storedToken)
        #expect(after.identifier == record.identifier)
        #expect(after.credentialStoreState?.isEmpty == false)
        #expect(events.withLock { $0 } == ["using"])
        guard case .object(let members) = after.json(device: "test:again", model: nil) else {
            Issue.record("not an object")
            return
        }
        #expect(members.suffix(3).map(\.0) == ["storedToken", "identifier", "credStoreState"])
        #expect(members.first { $0.0 == "pinRetries" }?.1 == .integer(8))

        // `token forget`: the record that fits goes, and only once.
        #expect(try await store.forget(authenticator) == 1)
        #expect(try store.records().isEmpty)
        #expect(try await store.forget(authenticator) == 0)
    }

    @Test(arguments: [[UInt8](), [0xA0], Array("not cbor".utf8), [0xA1, 0x65, 0x6D, 0x61, 0x67, 0x69, 0x63, 0x61, 0x78]])
    func aDamagedStoreIsRefused(bytes: [UInt8]) throws {
        let work = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: work) }
        let path = work.appendingPathComponent("tokens.cbor").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        let error = #expect(throws: AuthenticatorError.self) { try PersistentTokenStore(path: path).records() }
        #expect(error?.code == .tokenStoreUnavailable)
    }

    @Test func theDefaultPathFollowsXDG() {
        #expect(
            PersistentTokenStore.defaultPath(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"])
                == "/s/securitykey/tokens.cbor")
        #expect(PersistentTokenStore.defaultPath(environment: ["HOME": "/h"]) == "/h/.local/state/securitykey/tokens.cbor")
        #expect(PersistentTokenStore.defaultPath(environment: ["XDG_STATE_HOME": "relative"]) == nil)
    }
}
