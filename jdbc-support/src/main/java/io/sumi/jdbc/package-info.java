/**
 * What the JDBC ledger and the JDBC outbox share in their public API: {@link io.sumi.jdbc.DatabaseType}.
 */
@NullMarked
package io.sumi.jdbc;

import org.jspecify.annotations.NullMarked;
