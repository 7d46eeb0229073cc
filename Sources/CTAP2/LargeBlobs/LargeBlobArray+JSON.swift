import CBOR

extension LargeBlobArray.Corruption {
    /// The corruption as a JSON document (`largeBlob list|get --json`'s `corrupted`): its code
    /// and sentence.
    public var json: JSONValue { .members([("code", .string(code)), ("message", .string(description))]) }
}
