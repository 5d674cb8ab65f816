package quota

// This package has no error values of its own: it returns admit's,
// wrapped with %w and a message naming the problem, so test them with
// errors.Is: admit.ErrInvalidConfig for a Config field outside its domain
// (a size below 1 says "invalid quota size", a Period this package does
// not define "invalid period"), and for a size below 1 given per call
// (Request.Limit.Rate); admit.ErrInvalidCost for n < 0;
// admit.ErrKeyTooLong for a key longer than Config.MaxKeyLength; and
// admit.ErrTooManyKeys for a new key beyond Config.MaxKeys when none of
// the keys held is from an ended period.
