/**
 * The operator's side, internals: the Spring Data JDBC read models of the ledger and the outbox.
 *
 * <p>Not API: may change in any release. A type here is public only because another Sumi package
 * uses it (or Spring Data must see it); application code must not use any of them.
 */
@NullMarked
package io.sumi.autoconfigure.actuate.internal;

import org.jspecify.annotations.NullMarked;
