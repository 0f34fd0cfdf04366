/**
 * The JDBC {@link io.sumi.consumer.budget.SpendStore}: fleet budgets in the ledger's database.
 */
@NullMarked
package io.sumi.consumer.budget.jdbc;

import org.jspecify.annotations.NullMarked;
