/**
 * Vendor SQL of the JDBC ledger. Not API: may change in any release.
 */
@NullMarked
package io.sumi.store.jdbc.internal;

import org.jspecify.annotations.NullMarked;
