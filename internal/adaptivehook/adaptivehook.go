// Package adaptivehook reads from an adaptive.AIMD what its public surface
// does not show, the bounds of its rate, for promlimit's Observer.Watch
// (the floor and ceiling of admit_limiter_adaptive_limit), without a
// method on adaptive.AIMD for it.
package adaptivehook

// AIMDBounds returns the bounds of the rate of aimd, an *adaptive.AIMD
// (AIMDConfig.Min and Max, in events per AIMDConfig.Period), and ok false
// for any other value. It is set by package adaptive, so it is set in any
// program that has an AIMD to give it.
var AIMDBounds func(aimd any) (min, max int64, ok bool)
