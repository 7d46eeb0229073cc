import CTAP2
import Transport

extension Authenticator {
    /// Whether the key holds the credential `credentialID` of `rpID`, asked without a touch: a
    /// getAssertion with up=false over a zero client data hash (its signature is of no use to
    /// anyone), as OpenSSH's and pam-u2f's key searches do. A U2F-only key, a credential the key
    /// hides without user verification (credProtect), and any failure are all "no".
    public func holdsCredential(_ credentialID: [UInt8], rpID: String, deadline: Deadline) async -> Bool {
        if isU2FOnly { return false }
        let probe = GetAssertionRequest(
            rpID: rpID, clientDataHash: [UInt8](repeating: 0, count: 32),
            allowList: [PublicKeyCredentialDescriptor(id: credentialID)], options: CommandOptions(userPresence: false))
        do throws(CTAP2Error) {
            _ = try await session.getAssertion(probe, deadline: deadline)
            return true
        } catch {
            return false
        }
    }
}
