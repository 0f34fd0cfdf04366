/**
 * The JDBC ledger for PostgreSQL, MariaDB and H2: {@link io.sumi.store.jdbc.JdbcProcessedMessageStore}.
 */
@NullMarked
package io.sumi.store.jdbc;

import org.jspecify.annotations.NullMarked;
