import Testing

@testable import CTAP2

/// Each command's byte and name are declared in its own folder; these checks hold the folders
/// and ``CTAP2Command/known`` to the command table of CTAP 2.1 §6 (bytes and names typed in
/// from the specification, plus the two FIDO_2_1_PRE vendor commands libfido2 and python-fido2
/// send as 0x40 and 0x41).
@Suite struct CTAP2CommandTests {
    static let specTable: [(byte: UInt8, name: String)] = [
        (0x01, "authenticatorMakeCredential"),
        (0x02, "authenticatorGetAssertion"),
        (0x04, "authenticatorGetInfo"),
        (0x06, "authenticatorClientPIN"),
        (0x07, "authenticatorReset"),
        (0x08, "authenticatorGetNextAssertion"),
        (0x09, "authenticatorBioEnrollment"),
        (0x0A, "authenticatorCredentialManagement"),
        (0x0B, "authenticatorSelection"),
        (0x0C, "authenticatorLargeBlobs"),
        (0x0D, "authenticatorConfig"),
        (0x40, "authenticatorBioEnrollment (preview)"),
        (0x41, "authenticatorCredentialManagement (preview)"),
    ]

    /// A byte read off the wire is named as the specification names it.
    @Test(arguments: specTable)
    func byteFromTheWireIsNamed(byte: UInt8, name: String) {
        let command = CTAP2Command(rawValue: byte)
        #expect(command.description == name)
        #expect(command.name == name)
    }

    /// Every command this library declares is known, once, and names no byte the table lacks.
    @Test func knownMatchesTheTable() {
        let known = CTAP2Command.known.map(\.rawValue)
        #expect(Set(known).count == known.count)
        #expect(Set(known) == Set(Self.specTable.map(\.byte)))
    }

    /// Each request type sends the byte its folder declares.
    @Test func requestsSendTheirFoldersBytes() throws {
        #expect(GetInfoRequest().command.rawValue == 0x04)
        #expect(ResetRequest().command.rawValue == 0x07)
        #expect(SelectionRequest().command.rawValue == 0x0B)
        #expect(GetNextAssertionRequest().command.rawValue == 0x08)
        #expect(try LargeBlobsRequest.set(fragment: [1], offset: 0, length: 1, token: nil).command.rawValue == 0x0C)
    }

    /// Unknown bytes keep their value and get a neutral name; equality is by byte alone.
    @Test func unknownBytesAndEquality() {
        let unknown = CTAP2Command(rawValue: 0x3C)
        #expect(unknown.name == nil)
        #expect(unknown.description == "command(0x3c)")
        #expect(CTAP2Command(rawValue: 0x01) == .makeCredential)
        #expect(Set([CTAP2Command(rawValue: 0x0A), .credentialManagement]).count == 1)
    }
}
