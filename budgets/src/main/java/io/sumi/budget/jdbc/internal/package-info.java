/**
 * The spend store's SQL per database ({@link io.sumi.budget.jdbc.internal.SpendStoreDialect}).
 *
 * <p>Not API: may change in any release. A type here is public only because
 * {@code io.sumi.budget.jdbc} uses it; application code must not use any of them.
 */
@NullMarked
package io.sumi.budget.jdbc.internal;

import org.jspecify.annotations.NullMarked;
