import CBOR

/// authenticatorSelection (CTAP 2.1 §6.9): answers once the user touches this authenticator,
/// so a platform can let the user pick one of several keys.
public struct SelectionRequest: CTAP2Request, Hashable {
    /// The selection request (it takes no parameters).
    public init() {}

    /// authenticatorSelection.
    public var command: CTAP2Command { .selection }
    /// None.
    public var parameters: CBORMap? { nil }
    /// The decoded reply: nothing but the status.
    public typealias Response = EmptyResponse
}

extension CTAP2Command {
    /// authenticatorSelection (§6.9).
    public static let selection = CTAP2Command(0x0B, name: "authenticatorSelection")
}
