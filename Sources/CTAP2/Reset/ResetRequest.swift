import CBOR

/// authenticatorReset (CTAP 2.1 §6.6): erases every credential and the PIN. Needs a touch,
/// and most keys accept it only within seconds of being plugged in.
public struct ResetRequest: CTAP2Request, Hashable {
    /// The reset request (it takes no parameters).
    public init() {}

    /// authenticatorReset.
    public var command: CTAP2Command { .reset }
    /// None.
    public var parameters: CBORMap? { nil }
    /// The decoded reply: nothing but the status.
    public typealias Response = EmptyResponse
}

extension CTAP2Command {
    /// authenticatorReset (§6.6).
    public static let reset = CTAP2Command(0x07, name: "authenticatorReset")
}
