import Crypto

extension LargeBlobsRequest: PINUVAuthorizedRequest {
    /// lbw (CTAP 2.1 §6.10.2): only writes are authenticated.
    public static var permission: PINUVAuthTokenPermissions { .largeBlobWrite }
    /// 32×0xff ‖ 0x0c 0x00 ‖ uint32LE(offset) ‖ SHA-256(fragment) (§6.10.2).
    public func pinUVAuthMessage() throws(CTAP2Error) -> [UInt8] {
        guard let set else { throw .invalidRequest("Only a large-blob write is authenticated.") }
        guard let offset = UInt32(exactly: offset) else {
            throw .invalidRequest("A large-blob offset is a 32-bit number, not \(self.offset).")
        }
        return Self.pinUVAuthMessage(offset: offset, fragment: set)
    }
    /// The message for a fragment written at `offset`.
    public static func pinUVAuthMessage(offset: UInt32, fragment: [UInt8]) -> [UInt8] {
        let littleEndian = (0..<4).map { UInt8(truncatingIfNeeded: offset >> (8 * $0)) }
        return commandPrefix(.largeBlobs) + [0x00] + littleEndian + Array(SHA256.hash(data: fragment))
    }
}
