//! Which continent a country is on, for location databases that name only
//! the country (the ip-location-db schema), so that their locations read
//! `Europe.DE` like a MaxMind database's and static proximity can match on
//! the continent.
//!
//! The table is GeoNames' `countryInfo.txt` continent column (the source
//! MaxMind's continents come from too), 252 ISO 3166-1 alpha-2 codes, and
//! the names are MaxMind's English continent names.

use Continent::*;

/// The seven continents as GeoNames and MaxMind code them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Continent {
    AF,
    AN,
    AS,
    EU,
    NA,
    OC,
    SA,
}

impl Continent {
    /// The English name, as MaxMind's `continent.names.en` spells it.
    pub(super) fn name(self) -> &'static str {
        match self {
            AF => "Africa",
            AN => "Antarctica",
            AS => "Asia",
            EU => "Europe",
            NA => "North America",
            OC => "Oceania",
            SA => "South America",
        }
    }

    /// A two-letter continent code (`continent.code`), case-insensitively.
    pub(super) fn from_code(code: &str) -> Option<Continent> {
        Some(match code.to_ascii_uppercase().as_str() {
            "AF" => AF,
            "AN" => AN,
            "AS" => AS,
            "EU" => EU,
            "NA" => NA,
            "OC" => OC,
            "SA" => SA,
            _ => return None,
        })
    }

    /// The continent of an ISO 3166-1 alpha-2 country code,
    /// case-insensitively; `None` for codes that name no country (`ZZ`,
    /// GeoIP's old `EU`/`AP`).
    pub(super) fn of_country(code: &str) -> Option<Continent> {
        let b = code.as_bytes();
        if b.len() != 2 {
            return None;
        }
        let key = [b[0].to_ascii_uppercase(), b[1].to_ascii_uppercase()];
        COUNTRIES
            .binary_search_by_key(&key, |(c, _)| *c)
            .ok()
            .map(|i| COUNTRIES[i].1)
    }
}

/// Sorted by code.
const COUNTRIES: [([u8; 2], Continent); 252] = [
    (*b"AD", EU),
    (*b"AE", AS),
    (*b"AF", AS),
    (*b"AG", NA),
    (*b"AI", NA),
    (*b"AL", EU),
    (*b"AM", AS),
    (*b"AN", NA),
    (*b"AO", AF),
    (*b"AQ", AN),
    (*b"AR", SA),
    (*b"AS", OC),
    (*b"AT", EU),
    (*b"AU", OC),
    (*b"AW", NA),
    (*b"AX", EU),
    (*b"AZ", AS),
    (*b"BA", EU),
    (*b"BB", NA),
    (*b"BD", AS),
    (*b"BE", EU),
    (*b"BF", AF),
    (*b"BG", EU),
    (*b"BH", AS),
    (*b"BI", AF),
    (*b"BJ", AF),
    (*b"BL", NA),
    (*b"BM", NA),
    (*b"BN", AS),
    (*b"BO", SA),
    (*b"BQ", NA),
    (*b"BR", SA),
    (*b"BS", NA),
    (*b"BT", AS),
    (*b"BV", AN),
    (*b"BW", AF),
    (*b"BY", EU),
    (*b"BZ", NA),
    (*b"CA", NA),
    (*b"CC", AS),
    (*b"CD", AF),
    (*b"CF", AF),
    (*b"CG", AF),
    (*b"CH", EU),
    (*b"CI", AF),
    (*b"CK", OC),
    (*b"CL", SA),
    (*b"CM", AF),
    (*b"CN", AS),
    (*b"CO", SA),
    (*b"CR", NA),
    (*b"CS", EU),
    (*b"CU", NA),
    (*b"CV", AF),
    (*b"CW", NA),
    (*b"CX", OC),
    (*b"CY", EU),
    (*b"CZ", EU),
    (*b"DE", EU),
    (*b"DJ", AF),
    (*b"DK", EU),
    (*b"DM", NA),
    (*b"DO", NA),
    (*b"DZ", AF),
    (*b"EC", SA),
    (*b"EE", EU),
    (*b"EG", AF),
    (*b"EH", AF),
    (*b"ER", AF),
    (*b"ES", EU),
    (*b"ET", AF),
    (*b"FI", EU),
    (*b"FJ", OC),
    (*b"FK", SA),
    (*b"FM", OC),
    (*b"FO", EU),
    (*b"FR", EU),
    (*b"GA", AF),
    (*b"GB", EU),
    (*b"GD", NA),
    (*b"GE", AS),
    (*b"GF", SA),
    (*b"GG", EU),
    (*b"GH", AF),
    (*b"GI", EU),
    (*b"GL", NA),
    (*b"GM", AF),
    (*b"GN", AF),
    (*b"GP", NA),
    (*b"GQ", AF),
    (*b"GR", EU),
    (*b"GS", AN),
    (*b"GT", NA),
    (*b"GU", OC),
    (*b"GW", AF),
    (*b"GY", SA),
    (*b"HK", AS),
    (*b"HM", AN),
    (*b"HN", NA),
    (*b"HR", EU),
    (*b"HT", NA),
    (*b"HU", EU),
    (*b"ID", AS),
    (*b"IE", EU),
    (*b"IL", AS),
    (*b"IM", EU),
    (*b"IN", AS),
    (*b"IO", AS),
    (*b"IQ", AS),
    (*b"IR", AS),
    (*b"IS", EU),
    (*b"IT", EU),
    (*b"JE", EU),
    (*b"JM", NA),
    (*b"JO", AS),
    (*b"JP", AS),
    (*b"KE", AF),
    (*b"KG", AS),
    (*b"KH", AS),
    (*b"KI", OC),
    (*b"KM", AF),
    (*b"KN", NA),
    (*b"KP", AS),
    (*b"KR", AS),
    (*b"KW", AS),
    (*b"KY", NA),
    (*b"KZ", AS),
    (*b"LA", AS),
    (*b"LB", AS),
    (*b"LC", NA),
    (*b"LI", EU),
    (*b"LK", AS),
    (*b"LR", AF),
    (*b"LS", AF),
    (*b"LT", EU),
    (*b"LU", EU),
    (*b"LV", EU),
    (*b"LY", AF),
    (*b"MA", AF),
    (*b"MC", EU),
    (*b"MD", EU),
    (*b"ME", EU),
    (*b"MF", NA),
    (*b"MG", AF),
    (*b"MH", OC),
    (*b"MK", EU),
    (*b"ML", AF),
    (*b"MM", AS),
    (*b"MN", AS),
    (*b"MO", AS),
    (*b"MP", OC),
    (*b"MQ", NA),
    (*b"MR", AF),
    (*b"MS", NA),
    (*b"MT", EU),
    (*b"MU", AF),
    (*b"MV", AS),
    (*b"MW", AF),
    (*b"MX", NA),
    (*b"MY", AS),
    (*b"MZ", AF),
    (*b"NA", AF),
    (*b"NC", OC),
    (*b"NE", AF),
    (*b"NF", OC),
    (*b"NG", AF),
    (*b"NI", NA),
    (*b"NL", EU),
    (*b"NO", EU),
    (*b"NP", AS),
    (*b"NR", OC),
    (*b"NU", OC),
    (*b"NZ", OC),
    (*b"OM", AS),
    (*b"PA", NA),
    (*b"PE", SA),
    (*b"PF", OC),
    (*b"PG", OC),
    (*b"PH", AS),
    (*b"PK", AS),
    (*b"PL", EU),
    (*b"PM", NA),
    (*b"PN", OC),
    (*b"PR", NA),
    (*b"PS", AS),
    (*b"PT", EU),
    (*b"PW", OC),
    (*b"PY", SA),
    (*b"QA", AS),
    (*b"RE", AF),
    (*b"RO", EU),
    (*b"RS", EU),
    (*b"RU", EU),
    (*b"RW", AF),
    (*b"SA", AS),
    (*b"SB", OC),
    (*b"SC", AF),
    (*b"SD", AF),
    (*b"SE", EU),
    (*b"SG", AS),
    (*b"SH", AF),
    (*b"SI", EU),
    (*b"SJ", EU),
    (*b"SK", EU),
    (*b"SL", AF),
    (*b"SM", EU),
    (*b"SN", AF),
    (*b"SO", AF),
    (*b"SR", SA),
    (*b"SS", AF),
    (*b"ST", AF),
    (*b"SV", NA),
    (*b"SX", NA),
    (*b"SY", AS),
    (*b"SZ", AF),
    (*b"TC", NA),
    (*b"TD", AF),
    (*b"TF", AN),
    (*b"TG", AF),
    (*b"TH", AS),
    (*b"TJ", AS),
    (*b"TK", OC),
    (*b"TL", OC),
    (*b"TM", AS),
    (*b"TN", AF),
    (*b"TO", OC),
    (*b"TR", AS),
    (*b"TT", NA),
    (*b"TV", OC),
    (*b"TW", AS),
    (*b"TZ", AF),
    (*b"UA", EU),
    (*b"UG", AF),
    (*b"UM", OC),
    (*b"US", NA),
    (*b"UY", SA),
    (*b"UZ", AS),
    (*b"VA", EU),
    (*b"VC", NA),
    (*b"VE", SA),
    (*b"VG", NA),
    (*b"VI", NA),
    (*b"VN", AS),
    (*b"VU", OC),
    (*b"WF", OC),
    (*b"WS", OC),
    (*b"XK", EU),
    (*b"YE", AS),
    (*b"YT", AF),
    (*b"ZA", AF),
    (*b"ZM", AF),
    (*b"ZW", AF),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_known() {
        assert!(COUNTRIES.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(Continent::of_country("DE"), Some(EU));
        assert_eq!(Continent::of_country("us"), Some(NA));
        assert_eq!(Continent::of_country("JP"), Some(AS));
        assert_eq!(Continent::of_country("RU"), Some(EU));
        assert_eq!(Continent::of_country("TR"), Some(AS));
        assert_eq!(Continent::of_country("EG"), Some(AF));
        assert_eq!(Continent::of_country("AU"), Some(OC));
        assert_eq!(Continent::of_country("BR"), Some(SA));
        assert_eq!(Continent::of_country("AQ"), Some(AN));
        assert_eq!(Continent::of_country("ZZ"), None);
        assert_eq!(Continent::of_country("D"), None);
        assert_eq!(Continent::of_country("DEU"), None);
        assert_eq!(Continent::from_code("na"), Some(NA));
        assert_eq!(Continent::from_code("XX"), None);
        assert_eq!(NA.name(), "North America");
    }
}
