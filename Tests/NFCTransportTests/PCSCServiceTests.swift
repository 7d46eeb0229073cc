import Foundation
import NFCTransport
import Testing
import Transport

/// Needs the PC/SC test bed (scripts/pcsc-testbed.sh): pcscd with the two vpcd readers.
@Suite struct PCSCServiceTests {
    @Test func listsTheBedsReaders() async throws {
        let env = ProcessInfo.processInfo.environment
        guard env["PCSCLITE_CSOCK_NAME"] != nil, let names = env["SECURITYKEY_VPCD_READERS"] else {
            Issue.record(
                "Run under `scripts/pcsc-testbed.sh run -- swift test --skip-build --filter NFCTransportTests`."
            )
            return
        }
        let readers = try await PCSCDiscovery.readerNames()
        #expect(readers == names.split(separator: "|").map(String.init))
        let devices = try await PCSCDiscovery().devices()
        #expect(devices.allSatisfy { $0.transport == .nfc && $0.uri.hasPrefix("pcsc:") })
    }

    @Test func unknownReaderIsNoDevice() async throws {
        guard ProcessInfo.processInfo.environment["PCSCLITE_CSOCK_NAME"] != nil else {
            Issue.record(
                "Run under `scripts/pcsc-testbed.sh run -- swift test --skip-build --filter NFCTransportTests`."
            )
            return
        }
        await #expect { _ = try await PCSCDiscovery().open(uri: "pcsc:Not A Reader") } throws: {
            ($0 as? TransportError)?.code == .noDevice
        }
    }
}
