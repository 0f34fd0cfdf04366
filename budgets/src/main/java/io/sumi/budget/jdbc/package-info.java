/**
 * The JDBC {@link io.sumi.budget.SpendStore}: fleet budgets in the ledger's database.
 */
@NullMarked
package io.sumi.budget.jdbc;

import org.jspecify.annotations.NullMarked;
