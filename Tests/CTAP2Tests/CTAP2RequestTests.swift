import CBOR
import Foundation
import Testing
import Transport

@testable import CTAP2

/// Every command goes through ``CTAP2Session/send(_:deadline:keepalive:)``: the bytes it puts
/// on the wire are the ones python-fido2's Ctap2 sends for the same call (run live through
/// SECURITYKEY_PYTHON), and the reply decodes to the request's `Response` type.
@Suite struct CTAP2RequestTests {
    static var info: [UInt8] { Vectors.python("test_ctap2/module/_INFO")?.bytes ?? [] }
    static var getAssertionReply: [UInt8] { Vectors.python("test_ctap2/module/_GA_RESP")?.bytes ?? [] }
    static var makeCredentialReply: [UInt8] { Vectors.python("test_ctap2/module/_MC_RESP")?.bytes ?? [] }

    /// Sends `request` through the generic send over a connection that answers `reply`, and
    /// returns the bytes sent with the decoded response.
    static func sendOnce<R: CTAP2Request>(_ request: R, reply: [UInt8]) async throws -> ([UInt8], R.Response)
    {
        let conn = ReplayConnection([.success([0x00] + reply)])
        let session = CTAP2Session(connection: conn)
        let response = try await session.send(request)
        return (try #require(conn.requests.first), response)
    }

    @Test func getInfoIsSentAsPythonFIDO2SendsItAndKept() async throws {
        let (sent, info) = try await Self.sendOnce(GetInfoRequest(), reply: Self.info)
        #expect(
            sent
                == (try await PythonFIDO2CrossCheckTests.pythonBytes(
                    method: "get_info", args: [], reply: "test_ctap2/module/_INFO")))
        #expect(info.aaguid.bytes == Vectors.python("test_ctap2/module/_AAGUID")?.bytes)
    }

    @Test func getInfoThroughSendIsCachedLikeGetInfo() async throws {
        let conn = ReplayConnection([.success([0x00] + Self.info)])
        let session = CTAP2Session(connection: conn)
        let info = try await session.send(GetInfoRequest())
        #expect(await session.info == info)
    }

    @Test func makeCredentialIsSentAsPythonFIDO2SendsIt() async throws {
        let hash = [UInt8](repeating: 0x22, count: 32)
        let request = MakeCredentialRequest(
            clientDataHash: hash, rp: RelyingPartyEntity(id: "example.com", name: "Example"),
            user: UserEntity(id: [9, 8, 7], name: "u"),
            pubKeyCredParams: [.init(algorithm: .es256)],
            options: CommandOptions(residentKey: true))
        let (sent, response) = try await Self.sendOnce(request, reply: Self.makeCredentialReply)
        let expected = try await PythonFIDO2CrossCheckTests.pythonBytes(
            method: "make_credential",
            args: [
                "hex:" + hexString(hash), ["id": "example.com", "name": "Example"],
                ["id": "hex:090807", "name": "u"], [["type": "public-key", "alg": -7]], NSNull(),
                NSNull(), ["rk": true],
            ],
            reply: "test_ctap2/module/_MC_RESP")
        #expect(sent == expected)
        #expect(response.authData.bytes == Vectors.python("test_ctap2/module/_AUTH_DATA_MC")?.bytes)
    }

    @Test func getAssertionAndGetNextAreSentAsPythonFIDO2SendsThem() async throws {
        let hash = [UInt8](repeating: 0x33, count: 32)
        let request = GetAssertionRequest(rpID: "example.com", clientDataHash: hash)
        let (sent, response) = try await Self.sendOnce(request, reply: Self.getAssertionReply)
        #expect(
            sent
                == (try await PythonFIDO2CrossCheckTests.pythonBytes(
                    method: "get_assertion", args: ["example.com", "hex:" + hexString(hash)],
                    reply: "test_ctap2/module/_GA_RESP")))
        #expect(response.signature == Vectors.python("test_ctap2/module/_SIGNATURE")?.bytes)

        let (nextSent, next) = try await Self.sendOnce(
            GetNextAssertionRequest(), reply: Self.getAssertionReply)
        #expect(
            nextSent
                == (try await PythonFIDO2CrossCheckTests.pythonBytes(
                    method: "get_next_assertion", args: [], reply: "test_ctap2/module/_GA_RESP")))
        #expect(next.authData.bytes == Vectors.python("test_ctap2/module/_AUTH_DATA_GA")?.bytes)
    }

    @Test func clientPINIsSentAsPythonFIDO2SendsIt() async throws {
        let pinHashEnc = [UInt8](repeating: 0x44, count: 32)
        let request = ClientPINRequest(
            pinUVAuthProtocol: 2, subCommand: .getPINUVAuthTokenUsingPINWithPermissions,
            pinHashEnc: pinHashEnc, permissions: [.makeCredential, .getAssertion], rpID: "example.com")
        // pinRetries 8, powerCycleState false: CTAP 2.1 §6.5.5 response keys 0x03 and 0x04.
        let reply: [UInt8] = [0xA2, 0x03, 0x08, 0x04, 0xF4]
        let (sent, response) = try await Self.sendOnce(request, reply: reply)
        // permissions 0x03 = mc (0x01) | ga (0x02), CTAP 2.1 §6.5.5.7.
        let expected = try await PythonFIDO2CrossCheckTests.pythonBytes(
            method: "client_pin",
            args: [2, 9, NSNull(), NSNull(), NSNull(), "hex:" + hexString(pinHashEnc), 3, "example.com"],
            reply: "test_ctap2/module/_GA_RESP")
        #expect(sent == expected)
        #expect(sent == request.encoded())
        #expect(response.pinRetries == 8)
        #expect(response.powerCycleState == false)
    }

    @Test func resetAndSelectionAreSentAsPythonFIDO2SendsThem() async throws {
        let (reset, _) = try await Self.sendOnce(ResetRequest(), reply: [])
        #expect(
            reset
                == (try await PythonFIDO2CrossCheckTests.pythonBytes(
                    method: "reset", args: [], reply: "test_ctap2/module/_GA_RESP")))
        let (selection, _) = try await Self.sendOnce(SelectionRequest(), reply: [])
        #expect(
            selection
                == (try await PythonFIDO2CrossCheckTests.pythonBytes(
                    method: "selection", args: [], reply: "test_ctap2/module/_GA_RESP")))
    }

    @Test func untypedRequestReturnsTheBodyAsSent() async throws {
        let parameters: CBORMap = [0x01: 0x04]
        let (sent, body) = try await Self.sendOnce(
            UntypedRequest(.credentialManagement, parameters: parameters), reply: [0xA1, 0x01, 0x05])
        #expect(sent == [0x0A, 0xA1, 0x01, 0x04])
        #expect(body == [0xA1, 0x01, 0x05])
    }

    @Test func invalidRequestsAreRefusedBeforeTheGenericSendSendsThem() async throws {
        let conn = ReplayConnection([])
        let session = CTAP2Session(connection: conn)
        let request = GetAssertionRequest(
            rpID: "example.com", clientDataHash: [UInt8](repeating: 1, count: 32),
            options: CommandOptions(residentKey: true))
        let error = await #expect(throws: CTAP2Error.self) { try await session.send(request) }
        #expect(error?.code == .invalidRequest)
        #expect(conn.requests.isEmpty)
    }
}
