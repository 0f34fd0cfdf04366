/**
 * The JDBC plumbing of the ledger and the outbox: the own-transaction runner with its one retry
 * rule, identifier validation, per-vendor time binding, claim tokens and error summaries. Not API:
 * may change in any release.
 */
@NullMarked
package io.sumi.jdbc.internal;

import org.jspecify.annotations.NullMarked;
