/**
 * Internals of the operator's side: the Spring Data JDBC read models of the ledger and the outbox.
 * Not an API; may change in any release.
 */
@NullMarked
package io.sumi.autoconfigure.actuate.internal;

import org.jspecify.annotations.NullMarked;
