package quota

// Errors returned by this package are admit's: admit.ErrInvalidConfig
// for a Config field outside its domain (a Period this package does not
// define says "invalid period", a Limit below 1 "invalid quota size") and
// from ParsePeriod, admit.ErrInvalidLimit for a per-call size
// (Request.Limit.Rate) below 1, a bad request like any other invalid
// per-call limit, admit.ErrInvalidCost
// for n < 0, admit.ErrKeyTooLong for a key longer than
// Config.MaxKeyLength, and admit.ErrTooManyKeys for a new key beyond
// Config.MaxKeys when none of the keys held is from an ended period. They
// are wrapped with %w where a call has more to say, so test them with
// errors.Is.
