/**
 * The outbox's JSON header encoding and JDBC plumbing. They know nothing of {@code io.sumi.outbox}:
 * the SQL dialects, which read and write its records, are package-private there, so this package
 * never depends on the one that uses it (no package cycle).
 *
 * <p>Not API: may change in any release. A type here is public only because another Sumi package
 * uses it (the others are package-private); application code must not use any of them.
 */
@NullMarked
package io.sumi.outbox.internal;

import org.jspecify.annotations.NullMarked;
