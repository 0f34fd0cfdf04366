/**
 * Vendor SQL of the JDBC ledger.
 *
 * <p>Not API: may change in any release. A type here is public only because another Sumi package
 * uses it (the others are package-private); application code must not use any of them.
 */
@NullMarked
package io.sumi.store.jdbc.internal;

import org.jspecify.annotations.NullMarked;
