// Package pricing turns what a run's attempts consumed ([sortie.Usage])
// into what they cost ([sortie.Cost]), in exact integer nano-dollars.
//
// A [Table] is a versioned price table: list prices of Lambda (GB-seconds
// per architecture, requests), Cloud Run (vCPU-seconds, GiB-seconds and
// requests for request-based billing; instance-based billing; jobs),
// DynamoDB on-demand request units, AWS KMS and Cloud KMS requests, S3 and
// Cloud Storage requests, and the local launcher (0). Each price is a
// decimal string of dollars for a number of units, with the title of the
// page it was read from and the date ([Price]); prices.json in this
// package is the table shipped with a release ([Default]). A deployment
// with negotiated prices or another region overrides entries with a file
// of the same format ([Load], [Table.Override]) or single prices
// ([Table.Set]); the table's version names every override, and every cost
// carries the version that computed it.
//
// [Table.Price] implements [sortie.Pricer]: each attempt's quantities
// (see [Table.Attempt]) are priced exactly with math/big and rounded half
// up to whole nano-dollars per item, so a breakdown always sums to its
// total. No floating-point number is ever money: capacity units and vCPUs
// (reported as float64) are first rounded to thousandths.
//
// Cost is computed when a run is shown, from the usage stored on its
// attempts, so an override applies to past runs too; the version in the
// cost says which prices were used.
package pricing
