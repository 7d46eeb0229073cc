import NFCTransport
import Testing
import Transport

@Suite struct PCSCDeviceURITests {
    @Test(arguments: [
        ("pcsc:Virtual PCD 00 00", PCSCDeviceURI.name("Virtual PCD 00 00")),
        ("pcsc:Yubico YubiKey OTP+FIDO+CCID 01 00", .name("Yubico YubiKey OTP+FIDO+CCID 01 00")),
        ("pcsc:0", .index(0)),
        ("pcsc:12", .index(12)),
        ("pcsc:ACS ACR122U 1", .name("ACS ACR122U 1")),
    ])
    func parses(_ uri: String, _ expected: PCSCDeviceURI) throws {
        #expect(try PCSCDeviceURI(uri) == expected)
    }

    @Test(arguments: ["hid:/dev/hidraw0", "pcsc:", "PCSC:x", "pcsc:99999999999999999999"])
    func rejects(_ uri: String) {
        #expect(throws: TransportError.self) { try PCSCDeviceURI(uri) }
        do { _ = try PCSCDeviceURI(uri) } catch { #expect(error.code == .invalidURI) }
    }
}

/// The numeric values are those of pcsc-lite's pcsclite.h and the PC/SC specification part 5.
@Suite struct PCSCReturnCodeTests {
    @Test(arguments: [
        (PCSCReturnCode.cancelled, Int64(0x8010_0002)), (.unknownReader, 0x8010_0009),
        (.timeout, 0x8010_000A), (.sharingViolation, 0x8010_000B), (.noSmartcard, 0x8010_000C),
        (.notTransacted, 0x8010_0016), (.readerUnavailable, 0x8010_0017), (.noService, 0x8010_001D),
        (.noReadersAvailable, 0x8010_002E), (.resetCard, 0x8010_0068), (.removedCard, 0x8010_0069),
    ])
    func valuesMatchPCSCLite(_ code: PCSCReturnCode, _ value: Int64) {
        #expect(code.rawValue == value)
        // pcsc-lite knows every one of these by name, so its text is not the generic fallback.
        #expect(!code.description.hasPrefix("Unknown error"))
    }
}
