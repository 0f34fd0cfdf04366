/**
 * Implementation of budgets. Not API: may change in any release.
 */
@NullMarked
package io.sumi.consumer.budget.internal;

import org.jspecify.annotations.NullMarked;
