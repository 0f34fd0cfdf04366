/**
 * The operator's side of Sumi in Spring Boot Actuator: the {@code sumi} endpoint
 * ({@link io.sumi.autoconfigure.actuate.SumiEndpoint}) and the health indicators of the outbox, the
 * ledger and the budgets. Active when the application has Actuator on its class path.
 */
@NullMarked
package io.sumi.autoconfigure.actuate;

import org.jspecify.annotations.NullMarked;
