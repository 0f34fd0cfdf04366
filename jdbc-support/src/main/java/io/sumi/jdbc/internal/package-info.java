/**
 * The JDBC plumbing of the ledger and the outbox: the own-transaction runner with its one retry
 * rule, identifier validation, per-vendor time binding, SQL text blocks, claim tokens and error
 * summaries.
 *
 * <p>Not API: may change in any release. A type here is public only because another Sumi package
 * uses it (the others are package-private); application code must not use any of them.
 */
@NullMarked
package io.sumi.jdbc.internal;

import org.jspecify.annotations.NullMarked;
