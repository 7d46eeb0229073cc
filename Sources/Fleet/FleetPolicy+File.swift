import Authenticators
import FoundationEssentials

extension FleetPolicy {
    /// The largest policy file read.
    static let maximumFileSize = 1 << 20

    /// Reads and decodes the policy file at `path` (at most 1 MiB).
    public static func load(contentsOf path: String) throws(FleetError) -> FleetPolicy {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = attributes?[.size] as? Int, size > maximumFileSize {
            throw FleetError(.invalidPolicy, "The policy file \(path) is larger than 1 MiB.")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FleetError(.invalidPolicy, "Cannot read the policy file \(path).")
        }
        do {
            return try JSONDecoder().decode(FleetPolicy.self, from: data)
        } catch DecodingError.dataCorrupted(let context) {
            throw FleetError(
                .invalidPolicy, "The policy file \(path) is not valid: \(context.debugDescription)")
        } catch {
            throw FleetError(.invalidPolicy, "The policy file \(path) is not a valid policy (\(error)).")
        }
    }
}
