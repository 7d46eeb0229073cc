import CTAP2
import Transport

/// Naming a key before a destructive operation, and checking it is still that key after the
/// user confirmed (a key unplugged and another plugged in meanwhile must not be erased).
extension Authenticator {
    /// The key in words, for a confirmation: URI, transport, product name and AAGUID.
    public var identification: String {
        var text = "the security key at \(uri) (\(transport)"
        if let product = descriptor.product, product != uri { text += ", \(product)" }
        return text + ", AAGUID \(info.aaguid.description.lowercased()))"
    }

    /// Reads getInfo again and checks that the key still has `aaguid`, the AAGUID it had when
    /// the user confirmed; `different-device` otherwise.
    public func reidentify(as aaguid: AAGUID, deadline: Deadline) async throws(AuthenticatorError) {
        guard try await refreshInfo(deadline: deadline).aaguid == aaguid else {
            throw AuthenticatorError(
                .differentDevice, "The key at \(uri) is no longer the one confirmed; nothing was changed.",
                deviceURI: uri)
        }
    }
}
