package io.sumi.autoconfigure.actuate;

import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The budgets' part of {@link SumiEndpoint}, in terms that name no type of sumi-budgets (optional
 * for the starter): {@link BudgetRegistryOperations} is the one on a budget registry, created only
 * when sumi-budgets is on the class path.
 *
 * @since 0.1.0
 */
public interface SumiBudgetsOperations {

    /** Every budget by name (sorted), as the endpoint and the budgets' health show one. */
    Map<String, Object> all();

    /**
     * One write on budget {@code name}: {@code force-open}, {@code force-closed},
     * {@code reset-window} or {@code limit} (with {@code limit}).
     *
     * @throws org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException for an
     *     unknown budget or a missing or invalid limit
     */
    Map<String, Object> write(String action, String name, @Nullable Double limit);
}
