package address

import "strings"

// suffixes maps every spelling of a street suffix (USPS Publication 28,
// appendix C1: primary name, common abbreviations and frequent
// misspellings) to its standard abbreviation. Suffixes whose words are
// more often part of a name than a suffix in practice (KEY, PINE, MOUNT)
// are left out on purpose.
var suffixes = buildTable(map[string][]string{
	"ALY":  {"ALLEE", "ALLEY", "ALLY"},
	"ANX":  {"ANEX", "ANNEX", "ANNX"},
	"ARC":  {"ARCADE"},
	"AVE":  {"AV", "AVEN", "AVENU", "AVENUE", "AVN", "AVNUE"},
	"BCH":  {"BEACH"},
	"BLF":  {"BLUF", "BLUFF"},
	"BLVD": {"BOUL", "BOULEVARD", "BOULV"},
	"BND":  {"BEND"},
	"BR":   {"BRANCH", "BRNCH"},
	"BRG":  {"BRDGE", "BRIDGE"},
	"BRK":  {"BROOK"},
	"BTM":  {"BOT", "BOTTM", "BOTTOM"},
	"BYP":  {"BYPA", "BYPAS", "BYPASS", "BYPS"},
	"BYU":  {"BAYOO", "BAYOU"},
	"CIR":  {"CIRC", "CIRCL", "CIRCLE", "CRCL", "CRCLE"},
	"CLB":  {"CLUB"},
	"CLF":  {"CLIFF"},
	"CLFS": {"CLIFFS"},
	"CMN":  {"COMMON"},
	"COR":  {"CORNER"},
	"CORS": {"CORNERS"},
	"CP":   {"CAMP", "CMP"},
	"CPE":  {"CAPE"},
	"CRES": {"CRESCENT", "CRSENT", "CRSNT"},
	"CRK":  {"CREEK"},
	"CRSE": {"COURSE"},
	"CRST": {"CREST"},
	"CSWY": {"CAUSEWAY", "CAUSWA"},
	"CT":   {"COURT"},
	"CTR":  {"CEN", "CENT", "CENTER", "CENTR", "CENTRE", "CNTER", "CNTR"},
	"CTS":  {"COURTS"},
	"CURV": {"CURVE"},
	"CV":   {"COVE"},
	"CYN":  {"CANYN", "CANYON", "CNYN"},
	"DL":   {"DALE"},
	"DM":   {"DAM"},
	"DR":   {"DRIV", "DRIVE", "DRV"},
	"DV":   {"DIV", "DIVIDE", "DVD"},
	"EST":  {"ESTATE"},
	"ESTS": {"ESTATES"},
	"EXPY": {"EXP", "EXPR", "EXPRESS", "EXPRESSWAY", "EXPW"},
	"EXT":  {"EXTENSION", "EXTN", "EXTNSN"},
	"FLD":  {"FIELD"},
	"FLDS": {"FIELDS"},
	"FLS":  {"FALLS"},
	"FLT":  {"FLAT"},
	"FRD":  {"FORD"},
	"FRK":  {"FORK"},
	"FRKS": {"FORKS"},
	"FRST": {"FOREST", "FORESTS"},
	"FRY":  {"FERRY", "FRRY"},
	"FT":   {"FORT", "FRT"},
	"FWY":  {"FREEWAY", "FREEWY", "FRWAY", "FRWY"},
	"GDN":  {"GARDEN", "GARDN", "GRDEN", "GRDN"},
	"GDNS": {"GARDENS"},
	"GLN":  {"GLEN"},
	"GRN":  {"GREEN"},
	"GRV":  {"GROV", "GROVE"},
	"GTWY": {"GATEWAY", "GATEWY", "GATWAY", "GTWAY"},
	"HBR":  {"HARB", "HARBOR", "HARBR", "HRBOR"},
	"HL":   {"HILL"},
	"HLS":  {"HILLS"},
	"HOLW": {"HLLW", "HOLLOW", "HOLLOWS", "HOLWS"},
	"HTS":  {"HEIGHTS", "HT"},
	"HVN":  {"HAVEN"},
	"HWY":  {"HIGHWAY", "HIGHWY", "HIWAY", "HIWY", "HWAY"},
	"IS":   {"ISLAND", "ISLND"},
	"ISS":  {"ISLANDS"},
	"JCT":  {"JCTION", "JCTN", "JUNCTION", "JUNCTN", "JUNCTON"},
	"KNL":  {"KNOLL"},
	"LK":   {"LAKE"},
	"LKS":  {"LAKES"},
	"LN":   {"LANE"},
	"LNDG": {"LANDING", "LNDNG"},
	"LOOP": {"LOOPS"},
	"MALL": {},
	"MDW":  {"MEADOW"},
	"MDWS": {"MEADOWS", "MEDOWS"},
	"ML":   {"MILL"},
	"MNR":  {"MANOR"},
	"MTN":  {"MOUNTAIN", "MNTAIN", "MNTN", "MOUNTIN", "MTIN"},
	"MTWY": {"MOTORWAY"},
	"OPAS": {"OVERPASS"},
	"OVAL": {"OVL"},
	"PARK": {"PARKS", "PRK"},
	"PASS": {},
	"PATH": {"PATHS"},
	"PIKE": {"PIKES"},
	"PKWY": {"PARKWAY", "PARKWAYS", "PARKWY", "PKWAY", "PKWYS", "PKY"},
	"PL":   {"PLACE"},
	"PLN":  {"PLAIN"},
	"PLZ":  {"PLAZA", "PLZA"},
	"PR":   {"PRAIRIE", "PRR"},
	"PRT":  {"PORT"},
	"PT":   {"POINT"},
	"RADL": {"RAD", "RADIAL", "RADIEL"},
	"RD":   {"ROAD"},
	"RDG":  {"RDGE", "RIDGE"},
	"RIV":  {"RIVER", "RIVR", "RVR"},
	"RNCH": {"RANCH", "RANCHES", "RNCHS"},
	"ROW":  {},
	"RTE":  {"ROUTE"},
	"RUN":  {},
	"SHR":  {"SHOAR", "SHORE"},
	"SKWY": {"SKYWAY"},
	"SMT":  {"SUMIT", "SUMITT", "SUMMIT"},
	"SPG":  {"SPNG", "SPRING", "SPRNG"},
	"SQ":   {"SQR", "SQRE", "SQU", "SQUARE"},
	"ST":   {"STR", "STREET", "STRT"},
	"STA":  {"STATION", "STATN", "STN"},
	"TER":  {"TERR", "TERRACE"},
	"TPKE": {"TRNPK", "TURNPIKE", "TURNPK"},
	"TRAK": {"TRACK", "TRACKS", "TRK", "TRKS"},
	"TRCE": {"TRACE", "TRACES"},
	"TRL":  {"TRAIL", "TRAILS", "TRLS"},
	"TUNL": {"TUNEL", "TUNLS", "TUNNEL", "TUNNELS", "TUNNL"},
	"UPAS": {"UNDERPASS"},
	"VIA":  {"VDCT", "VIADCT", "VIADUCT"},
	"VIS":  {"VIST", "VISTA", "VST", "VSTA"},
	"VLG":  {"VILL", "VILLAG", "VILLAGE", "VILLG", "VILLIAGE"},
	"VLY":  {"VALLEY", "VALLY", "VLLY"},
	"VW":   {"VIEW"},
	"WALK": {"WALKS"},
	"WAY":  {"WY"},
	"WL":   {"WELL"},
	"XING": {"CROSSING", "CRSSNG"},
})

// directionals maps directional words and abbreviations to their USPS
// abbreviation (Publication 28, appendix B).
var directionals = buildTable(map[string][]string{
	"N":  {"NORTH"},
	"S":  {"SOUTH"},
	"E":  {"EAST"},
	"W":  {"WEST"},
	"NE": {"NORTHEAST", "NORTH-EAST"},
	"NW": {"NORTHWEST", "NORTH-WEST"},
	"SE": {"SOUTHEAST", "SOUTH-EAST"},
	"SW": {"SOUTHWEST", "SOUTH-WEST"},
})

// units maps secondary unit designators to their USPS abbreviation
// (Publication 28, appendix C2). "#" is the designator of a unit whose
// kind is unknown.
var units = buildTable(map[string][]string{
	"APT":  {"APARTMENT", "APMT"},
	"BLDG": {"BUILDING", "BLD"},
	"BSMT": {"BASEMENT"},
	"DEPT": {"DEPARTMENT"},
	"FL":   {"FLOOR", "FLR"},
	"FRNT": {"FRONT"},
	"HNGR": {"HANGAR", "HANGER"},
	"LBBY": {"LOBBY"},
	"LOT":  {},
	"LOWR": {"LOWER"},
	"OFC":  {"OFFICE"},
	"PH":   {"PENTHOUSE"},
	"PIER": {},
	"REAR": {},
	"RM":   {"ROOM"},
	"SIDE": {},
	"SLIP": {},
	"SPC":  {"SPACE"},
	"STOP": {},
	"STE":  {"SUITE", "SUIT"},
	"TRLR": {"TRAILER"},
	"UNIT": {},
	"UPPR": {"UPPER"},
	"#":    {"NO", "NUM", "NUMBER"},
})

// unitsWithoutNumber are designators that need no unit number.
var unitsWithoutNumber = map[string]bool{
	"BSMT": true, "FRNT": true, "LBBY": true, "LOWR": true, "OFC": true,
	"PH": true, "REAR": true, "SIDE": true, "UPPR": true,
}

// ordinalWords maps spelled ordinals to their numeric form.
var ordinalWords = map[string]int{
	"FIRST": 1, "SECOND": 2, "THIRD": 3, "FOURTH": 4, "FIFTH": 5,
	"SIXTH": 6, "SEVENTH": 7, "EIGHTH": 8, "NINTH": 9, "TENTH": 10,
	"ELEVENTH": 11, "TWELFTH": 12, "THIRTEENTH": 13, "FOURTEENTH": 14,
	"FIFTEENTH": 15, "SIXTEENTH": 16, "SEVENTEENTH": 17, "EIGHTEENTH": 18,
	"NINETEENTH": 19, "TWENTIETH": 20, "THIRTIETH": 30, "FORTIETH": 40,
	"FIFTIETH": 50, "SIXTIETH": 60, "SEVENTIETH": 70, "EIGHTIETH": 80,
	"NINETIETH": 90, "HUNDREDTH": 100,
}

// tens are the words that combine with an ordinal: TWENTY FIRST = 21ST.
var tens = map[string]int{
	"TWENTY": 20, "THIRTY": 30, "FORTY": 40, "FIFTY": 50,
	"SIXTY": 60, "SEVENTY": 70, "EIGHTY": 80, "NINETY": 90,
}

// states maps USPS state and territory codes and names to the code.
var states = func() map[string]string {
	names := map[string]string{
		"AL": "ALABAMA", "AK": "ALASKA", "AZ": "ARIZONA", "AR": "ARKANSAS",
		"CA": "CALIFORNIA", "CO": "COLORADO", "CT": "CONNECTICUT", "DE": "DELAWARE",
		"DC": "DISTRICT OF COLUMBIA", "FL": "FLORIDA", "GA": "GEORGIA", "HI": "HAWAII",
		"ID": "IDAHO", "IL": "ILLINOIS", "IN": "INDIANA", "IA": "IOWA",
		"KS": "KANSAS", "KY": "KENTUCKY", "LA": "LOUISIANA", "ME": "MAINE",
		"MD": "MARYLAND", "MA": "MASSACHUSETTS", "MI": "MICHIGAN", "MN": "MINNESOTA",
		"MS": "MISSISSIPPI", "MO": "MISSOURI", "MT": "MONTANA", "NE": "NEBRASKA",
		"NV": "NEVADA", "NH": "NEW HAMPSHIRE", "NJ": "NEW JERSEY", "NM": "NEW MEXICO",
		"NY": "NEW YORK", "NC": "NORTH CAROLINA", "ND": "NORTH DAKOTA", "OH": "OHIO",
		"OK": "OKLAHOMA", "OR": "OREGON", "PA": "PENNSYLVANIA", "RI": "RHODE ISLAND",
		"SC": "SOUTH CAROLINA", "SD": "SOUTH DAKOTA", "TN": "TENNESSEE", "TX": "TEXAS",
		"UT": "UTAH", "VT": "VERMONT", "VA": "VIRGINIA", "WA": "WASHINGTON",
		"WV": "WEST VIRGINIA", "WI": "WISCONSIN", "WY": "WYOMING", "PR": "PUERTO RICO",
		"GU": "GUAM", "VI": "VIRGIN ISLANDS", "AS": "AMERICAN SAMOA",
		"MP": "NORTHERN MARIANA ISLANDS",
	}
	m := make(map[string]string, 2*len(names))
	for code, name := range names {
		m[code] = code
		m[name] = code
	}
	return m
}()

// maxStateWords is the most words a state name has.
const maxStateWords = 4

func buildTable(groups map[string][]string) map[string]string {
	m := map[string]string{}
	for std, variants := range groups {
		m[std] = std
		for _, v := range variants {
			m[strings.ReplaceAll(v, "-", "")] = std
		}
	}
	return m
}
