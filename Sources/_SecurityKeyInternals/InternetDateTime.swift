/// Parses the times users type for "as of" options: an RFC 3339 §5.6 date-time
/// (`2024-01-31T12:00:00Z`, `2024-01-31T12:00:00.250+01:00`, `t`/`z` and a space for `T`
/// allowed) or a full date alone (`2024-01-31`, midnight UTC). No calendar library: the
/// proleptic Gregorian day count is computed here, so it works without ICU.
public enum InternetDateTime {
    /// A moment as seconds since 1970-01-01T00:00:00Z (fraction included); nil when `text` is
    /// not one of the accepted forms or names an impossible date or time.
    public static func secondsSince1970(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 10, bytes.count <= 64 else { return nil }
        var reader = Reader(bytes: bytes)
        guard let year = reader.digits(4), reader.take(UInt8(ascii: "-")), let month = reader.digits(2),
            reader.take(UInt8(ascii: "-")), let day = reader.digits(2),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        if reader.atEnd { return Double(days) * 86_400 }
        guard let separator = reader.next(), separator == UInt8(ascii: "T") || separator == UInt8(ascii: "t")
                || separator == UInt8(ascii: " "),
            let hour = reader.digits(2), reader.take(UInt8(ascii: ":")), let minute = reader.digits(2),
            reader.take(UInt8(ascii: ":")), let second = reader.digits(2),
            hour <= 23, minute <= 59, second <= 60
        else { return nil }
        var fraction = 0.0
        if reader.take(UInt8(ascii: ".")) {
            var scale = 0.1
            var count = 0
            while let digit = reader.digit() {
                fraction += Double(digit) * scale
                scale /= 10
                count += 1
            }
            guard count > 0 else { return nil }
        }
        guard let zone = reader.next() else { return nil }
        var offset = 0
        if zone == UInt8(ascii: "Z") || zone == UInt8(ascii: "z") {
            offset = 0
        } else if zone == UInt8(ascii: "+") || zone == UInt8(ascii: "-") {
            guard let hours = reader.digits(2), reader.take(UInt8(ascii: ":")), let minutes = reader.digits(2),
                hours <= 23, minutes <= 59
            else { return nil }
            offset = (hours * 60 + minutes) * 60 * (zone == UInt8(ascii: "-") ? -1 : 1)
        } else {
            return nil
        }
        guard reader.atEnd else { return nil }
        // A leap second (:60) is counted as the first second of the next minute, as POSIX time does.
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offset)
        return Double(seconds) + fraction
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date (negative before it).
    static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        // Counted from 0000-03-01 so that the leap day ends each 4-, 100- and 400-year cycle.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Reads ASCII digits and signs from the text, one byte at a time, never past its end.
    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func next() -> UInt8? {
            guard index < bytes.count else { return nil }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func digit() -> Int? {
            guard index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
            defer { index += 1 }
            return Int(bytes[index] - 0x30)
        }

        mutating func digits(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let d = digit() else { return nil }
                value = value * 10 + d
            }
            return value
        }
    }
}
