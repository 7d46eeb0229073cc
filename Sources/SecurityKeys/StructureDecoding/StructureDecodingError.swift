/// Why ``StructureDecoder`` refused its input: one sentence (the CLI reports it as
/// `invalid-input`).
public struct StructureDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// One sentence for the user.
    public var message: String

    /// An error with its sentence.
    public init(_ message: String) { self.message = message }

    /// The sentence.
    public var description: String { message }
}
