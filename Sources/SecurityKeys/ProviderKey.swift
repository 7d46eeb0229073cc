import Authenticators
import CBOR
import CTAP2
import Logging
import Transport

/// The key a request uses: the device layer's handle and the getInfo it had when chosen.
struct ProviderKey: Sendable {
    let authenticator: Authenticator
    let info: AuthenticatorInfo

    var session: CTAP2Session { authenticator.session }
    var uri: String { authenticator.uri }

    /// The transports to record with a new credential: what the key says, else how it was reached.
    var transports: [SecurityKeyTransport] {
        if !info.transports.isEmpty { return info.transports.map(SecurityKeyTransport.init(rawValue:)) }
        switch authenticator.transport {
        case .nfc: return [.nfc]
        case .usb: return [.usb]
        default: return []
        }
    }

    /// Finds which of `credentials` this key holds for `rpID` without a touch (getAssertion with
    /// up=false), in chunks of maxCredentialCountInList, skipping IDs longer than
    /// maxCredentialIdLength (the key cannot hold them). Returns the matching descriptor.
    func preflight(
        rpID: String, credentials: [SecurityKeyCredentialDescriptor], clientDataHash: [UInt8],
        token: PINUVAuthToken?, deadline: Deadline
    ) async throws(SecurityKeyError) -> SecurityKeyCredentialDescriptor? {
        let maxLength = info.maxCredentialIDLength.map { Int(clamping: $0) } ?? Int.max
        let candidates = credentials.filter { !$0.credentialID.isEmpty && $0.credentialID.count <= maxLength }
        let chunkSize = max(1, info.maxCredentialCountInList.map { Int(clamping: $0) } ?? 1)
        var start = 0
        while start < candidates.count {
            let chunk = Array(candidates[start..<min(start + chunkSize, candidates.count)])
            start += chunkSize
            var request = GetAssertionRequest(
                rpID: rpID, clientDataHash: clientDataHash,
                allowList: chunk.map { PublicKeyCredentialDescriptor(id: $0.credentialID) },
                options: CommandOptions(userPresence: false))
            let response: GetAssertionResponse
            do throws(CTAP2Error) {
                if let token, token.rpID == nil || token.rpID == rpID,
                    token.permissions.contains(.getAssertion)
                {
                    try request.authorize(with: token)
                }
                response = try await session.getAssertion(request, deadline: deadline)
            } catch {
                if error.code == .noCredentials { continue }
                throw SecurityKeyError(error)
            }
            let id = response.credential?.id ?? (chunk.count == 1 ? chunk[0].credentialID : nil)
            guard let id, let match = chunk.first(where: { $0.credentialID == id }) else {
                throw SecurityKeyError(
                    .invalidResponse,
                    "The security key answered a silent check with a credential that was not asked for.")
            }
            return match
        }
        return nil
    }
}

