import Authenticators
import Foundation
import CTAP2
import Testing
import Transport
import VirtualAuthenticator

/// The fleet inventory over in-process virtual keys, and policy verdicts on its reports: the
/// keys' configurations (set here) are the values the verdicts must follow.
struct FleetPolicyTests {
    static let pinKeyAAGUID: [UInt8] = Array(0x10..<0x20)
    static let bareKeyAAGUID: [UInt8] = Array(0x20..<0x30)

    func reports() async throws -> [FleetKeyReport] {
        let withPIN = try VirtualKey(
            configuration: .init(aaguid: Self.pinKeyAAGUID, firmwareVersion: 0x05_07_02, minPINLength: 6, pin: "123456"))
        let bare = try VirtualKey(configuration: .init(aaguid: Self.bareKeyAAGUID, firmwareVersion: 0x01_00_00))
        let discovery = ScriptedDiscovery([("pin", withPIN), ("bare", bare)])
        let inventory = FleetInventory(directory: AuthenticatorDirectory(discoveries: [discovery]))
        let listed = await inventory.devices()
        return await inventory.inspect(listed.devices, overall: .after(.seconds(20)))
    }

    func report(_ reports: [FleetKeyReport], _ name: String) throws -> FleetKeyReport {
        try #require(reports.first { $0.descriptor.uri == "test:\(name)" })
    }

    @Test func theInventoryReportsEachKeyAsConfiguredAndHealthy() async throws {
        let reports = try await reports()
        #expect(reports.count == 2)
        let pin = try report(reports, "pin"), bare = try report(reports, "bare")
        #expect(pin.info?.aaguid.bytes == Self.pinKeyAAGUID)
        #expect(pin.info?.firmwareVersion == 0x05_07_02)
        #expect(pin.pinStatus?.isSet == true)
        // CTAP 2.1 §6.5.2.2: a key whose PIN was just set has all 8 attempts.
        #expect(pin.pinStatus?.retries == 8)
        #expect(bare.pinStatus?.isSet == false)
        // The silent up=false getAssertion for an unknown credential must be refused with
        // CTAP2_ERR_NO_CREDENTIALS (0x2E) by a healthy key.
        #expect(pin.isHealthy && bare.isHealthy)
    }

    @Test func policyVerdictsFollowTheKeysConfiguration() async throws {
        let reports = try await reports()
        let pin = try report(reports, "pin"), bare = try report(reports, "bare")
        let strict = FleetPolicy(
            allowedAAGUIDs: ["10111213-1415-1617-1819-1a1b1c1d1e1f"], minimumFirmware: 0x05_00_00, pinRequired: true,
            minimumPINLength: 6)
        #expect(strict.violations(of: pin).isEmpty)
        let refused = strict.violations(of: bare)
        #expect(refused.count == 4, "\(refused)")  // AAGUID, firmware, no PIN, PIN length 4 < 6
        #expect(refused.contains("No PIN is set."))
        #expect(FleetPolicy().violations(of: bare).isEmpty, "an empty policy refuses nothing")
        let stricterPIN = FleetPolicy(minimumPINLength: 8)
        #expect(stricterPIN.violations(of: pin).count == 1)
    }

    @Test func certificationLevelsAreOrderedAsFIDODefinesThem() async throws {
        let reports = try await reports()
        let pin = try report(reports, "pin")
        let policy = FleetPolicy(minimumCertificationLevel: "L1plus")
        let l1 = FleetPolicy.Metadata(certification: "FIDO_CERTIFIED_L1")
        let l2 = FleetPolicy.Metadata(certification: "FIDO_CERTIFIED_L2")
        #expect(policy.violations(of: pin, metadata: l1).count == 1)
        #expect(policy.violations(of: pin, metadata: l2).isEmpty)
        // A level-less FIDO_CERTIFIED, or no metadata at all, does not show the level.
        #expect(policy.violations(of: pin, metadata: .init(certification: "FIDO_CERTIFIED")).count == 1)
        #expect(policy.violations(of: pin).count == 1)
        let misspelt = #"{"minimumCertificationLevel": "L4"}"#
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(FleetPolicy.self, from: Data(misspelt.utf8))
        }
        let decoded = try JSONDecoder().decode(
            FleetPolicy.self, from: Data(#"{"minimumCertificationLevel": "FIDO_CERTIFIED_L2"}"#.utf8))
        #expect(decoded.violations(of: pin, metadata: l2).isEmpty)
        #expect(decoded.violations(of: pin, metadata: l1).count == 1)
    }

    @Test func aKeyThatCouldNotBeInspectedFailsEveryPolicy() {
        var report = FleetKeyReport(descriptor: DeviceDescriptor(uri: "udp:127.0.0.1:9", transport: .udp))
        report.problem = AuthenticatorError(.timeout, "The key did not answer.")
        #expect(FleetPolicy().violations(of: report).count == 1)
        #expect(!report.isHealthy)
    }
}
