import CBOR

/// authenticatorGetNextAssertion (CTAP 2.1 §6.3): the next of the `numberOfCredentials`
/// assertions a getAssertion announced.
public struct GetNextAssertionRequest: CTAP2Request, Hashable {
    /// The getNextAssertion request (it takes no parameters).
    public init() {}

    /// authenticatorGetNextAssertion.
    public var command: CTAP2Command { .getNextAssertion }
    /// None.
    public var parameters: CBORMap? { nil }
    /// The decoded reply: the same shape as getAssertion's.
    public typealias Response = GetAssertionResponse
}

extension CTAP2Command {
    /// authenticatorGetNextAssertion (§6.3).
    public static let getNextAssertion = CTAP2Command(0x08, name: "authenticatorGetNextAssertion")
}
