// Package quota provides calendar quotas: at most N events per key per
// hour, day, week, month or year of the calendar of a time zone ("10,000
// API calls per month, from the first of the month in UTC", "50 exports a
// day, from midnight in Europe/Paris"). Each decision reports what remains
// of the period and when it ends.
//
// A quota is not a rate. A monthly quota of 30,000 is not 1,000 a day: the
// whole 30,000 is available when the month starts, all of it may be used
// in its first minute, and nothing comes back until the next month starts,
// when the count starts over from zero. Periods follow the calendar, so
// they are not all the same length: a month lasts 28 to 31 days, and a day
// with a daylight-saving change 23 or 25 hours.
//
// # Which one should I use?
//
//   - A Quota when the limit is a count per calendar period that people
//     read on a bill, a plan or a dashboard ("per month", "per day",
//     resetting at midnight in the customer's time zone), where Remaining
//     and the reset time are part of the product.
//   - A rate limiter (admit.GCRA, or package keyed for many keys) to
//     protect capacity: it spreads events over time and refills
//     continuously. A quota does not smooth anything (its N may all arrive
//     at once), so a service usually needs both: a rate limit for load and
//     a quota for the plan, checked together (package compose) with the
//     quota last, so that the requests the rate limit refuses use no quota
//     (a quota checked earlier gives them back: see Quota.Refund).
//   - admit.NewFixedWindow when clients expect a count that resets on the
//     clock every fixed duration (a minute, an hour) and time zones do not
//     matter: its windows are aligned on the Unix epoch and all the same
//     length, which calendar days and months are not.
//
// # Periods
//
// A period starts at the first instant at which the wall clock of the
// location reads its first moment (midnight, or hh:00 for an hour) and
// ends where the next one starts; weeks start on Monday unless
// Config.WeekStart says otherwise. Period.Bounds documents what this means on
// daylight-saving changes, including the zones whose clocks skip midnight
// itself (the day then starts at 01:00). The Decision's Limit.Period is the
// length of the period decided in, so it says 23h or 25h on the days the
// clocks change.
//
// # Decisions
//
// Decisions are admit.Decisions of Kind admit.KindQuota, with Limit
// {Rate: N, Burst: N, Period: the current period's length}; Remaining, the
// events left in the period; RetryAfter, 0 when allowed, else the time until
// the period ends (admit.InfDuration if n > N); and ResetAfter, the time
// until the period ends if anything is counted in it, else 0. A denial is
// not an error. Quota.AllowAtMost takes what remains of the period, up to
// n, for a batch that may be cut (50 exports asked, 12 left today: 12 are
// done now); its Decision's RetryAfter, when it granted fewer than n, is
// the time until the period ends.
//
// A Quota stores a small value per key with events counted (its period and
// its count), forgets keys lazily once their period has ended, and refuses
// new keys beyond a cap rather than forget keys whose period is running;
// see Quota.
package quota
