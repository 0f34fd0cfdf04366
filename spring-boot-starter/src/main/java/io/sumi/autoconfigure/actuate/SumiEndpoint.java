package io.sumi.autoconfigure.actuate;

import io.sumi.autoconfigure.actuate.internal.LedgerRow;
import io.sumi.autoconfigure.actuate.internal.OutboxControl;
import io.sumi.autoconfigure.actuate.internal.OutboxRow;
import io.sumi.autoconfigure.actuate.internal.SumiReadModels;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.security.Principal;
import java.time.Clock;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.data.domain.Page;
import org.springframework.data.domain.PageRequest;
import org.springframework.data.domain.Sort;

/**
 * The {@code sumi} Actuator endpoint: what an operator needs to see and do when messages are stuck.
 *
 * <p>Reads ({@code GET /actuator/sumi}, {@code GET /actuator/sumi/{section}}): the ledger's counts
 * per consumer and status with each consumer's oldest live claim, live claims and rows held for
 * reconciliation (paged), the outbox's backlog per topic and its parked rows (paged), every
 * budget's state and spend.
 *
 * <p>Writes ({@code POST /actuator/sumi/{target}/{action}} with a JSON body): release a live claim,
 * resolve a reconciliation (complete, or release for a retry), re-drive parked outbox rows (by id,
 * by topic, all), force a budget open or closed, reset its window, change its limit. They go
 * through the ledger's store SPI, the outbox table and the budget registry, never through SQL of
 * their own; each is logged at {@code WARN} with who asked (the principal Actuator passes, else
 * {@code anonymous}) and what changed.
 *
 * <p>Access: {@linkplain Access#READ_ONLY read-only by default}, so the writes exist only where the
 * application grants them ({@code management.endpoint.sumi.access=unrestricted}); over HTTP the
 * endpoint must also be exposed ({@code management.endpoints.web.exposure.include=sumi}), and
 * Spring Security, when present, guards it like every Actuator endpoint.
 *
 * <p>A ledger outside the application's database (the Redis ledger, {@code sumi.ledger.store=redis},
 * with or without a DataSource): the {@code ledger} section comes from the store
 * ({@link ProcessedMessageStore#consumerStats()}: per consumer the age of its oldest live claim and
 * the rows held for reconciliation), the row listings ({@code claims}, {@code reconciliation}) are
 * refused ({@code 400}, the store has no listing), and every write goes through the store SPI as on
 * the JDBC ledger.
 *
 * <p>Answers: a write whose target is not in the state it acts on (no such claim, a row that is not
 * parked) answers {@code changed: false} with the reason, not an error; a request that lacks what
 * the action needs, or names an unknown section, action or budget, is refused ({@code 400}).
 */
@Endpoint(id = "sumi", defaultAccess = Access.READ_ONLY)
public class SumiEndpoint {

    private static final Logger log = LoggerFactory.getLogger(SumiEndpoint.class);

    /** Page size when none is asked for. */
    public static final int DEFAULT_PAGE_SIZE = 20;

    /** The largest page served. */
    public static final int MAX_PAGE_SIZE = 500;

    private final @Nullable SumiReadModels readModels;
    /** Whether the ledger is the table {@link #readModels} reads (the JDBC ledger), else the store is read. */
    private final boolean ledgerInReadModels;

    private final @Nullable ProcessedMessageStore store;
    private final @Nullable OutboxControl outbox;
    private final @Nullable SumiBudgetsOperations budgets;
    private final Clock clock;

    public SumiEndpoint(
            SumiReadModels readModels,
            @Nullable ProcessedMessageStore store,
            @Nullable OutboxControl outbox,
            @Nullable SumiBudgetsOperations budgets,
            Clock clock) {
        this(readModels, true, store, outbox, budgets, clock);
    }

    /**
     * @param readModels the read models of the application's database, if it has one (the outbox's
     *     listings, and the ledger's if {@code ledgerInReadModels})
     * @param ledgerInReadModels whether the ledger is the JDBC ledger's table in that database; else
     *     the {@code ledger} section reads {@code store}
     * @since 0.1.0
     */
    public SumiEndpoint(
            @Nullable SumiReadModels readModels,
            boolean ledgerInReadModels,
            @Nullable ProcessedMessageStore store,
            @Nullable OutboxControl outbox,
            @Nullable SumiBudgetsOperations budgets,
            Clock clock) {
        if (ledgerInReadModels && readModels == null) {
            throw new IllegalArgumentException("The JDBC ledger's listings need the read models of its DataSource");
        }
        this.readModels = readModels;
        this.ledgerInReadModels = ledgerInReadModels;
        this.store = store;
        this.outbox = outbox;
        this.budgets = budgets;
        this.clock = clock;
    }

    // ------------------------------------------------------------------------------------ reads

    /** Everything at a glance: ledger per consumer, outbox per topic, budgets. */
    @ReadOperation
    public Map<String, Object> summary() {
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("ledger", ledger());
        if (outbox != null) {
            summary.put("outbox", outboxBacklog());
        }
        summary.put("budgets", budgets());
        return summary;
    }

    /**
     * One section: {@code ledger}, {@code claims} (live and released claims, paged),
     * {@code reconciliation} (rows held, paged), {@code outbox} (backlog per topic), {@code parked}
     * (parked outbox rows, paged), {@code budgets}.
     *
     * @param page the page, from 0
     * @param size rows per page, {@value #DEFAULT_PAGE_SIZE} by default, at most {@value #MAX_PAGE_SIZE}
     * @param consumer only this consumer's rows ({@code claims}, {@code reconciliation})
     * @param topic only this topic's rows ({@code parked})
     */
    @ReadOperation
    public Object section(
            @Selector String section,
            @Nullable Integer page,
            @Nullable Integer size,
            @Nullable String consumer,
            @Nullable String topic) {
        return switch (section) {
            case "ledger" -> ledger();
            case "claims" -> ledgerPage(MessageStatus.IN_PROGRESS, consumer, page, size);
            case "reconciliation" -> ledgerPage(MessageStatus.RECONCILE, consumer, page, size);
            case "outbox" -> outboxBacklog();
            case "parked" -> {
                requireOutbox();
                yield page(
                        requireReadModels().parked(topic, pageRequest(page, size, Sort.by("id"))),
                        SumiEndpoint::outboxRow);
            }
            case "budgets" -> budgets();
            default ->
                throw new InvalidEndpointRequestException(
                        "Unknown section '" + section
                                + "': use ledger, claims, reconciliation, outbox, parked or budgets",
                        "Unknown section");
        };
    }

    private Map<String, Object> ledgerPage(
            MessageStatus status, @Nullable String consumer, @Nullable Integer page, @Nullable Integer size) {
        if (!ledgerInReadModels) {
            throw new InvalidEndpointRequestException(
                    "This application's ledger is not in its database (sumi.ledger.store=redis): its rows are not"
                            + " listed here; GET /actuator/sumi/ledger shows each consumer's oldest live claim and"
                            + " rows held for reconciliation (see docs/redis-ledger.md for reading the rows)",
                    "No ledger listing");
        }
        Sort oldestFirst = Sort.by("firstSeenAt", "id.consumer", "id.messageId");
        return page(
                requireReadModels().ledgerRows(status.name(), consumer, pageRequest(page, size, oldestFirst)),
                SumiEndpoint::ledgerRow);
    }

    private Map<String, Object> ledger() {
        if (!ledgerInReadModels) {
            return storeLedger();
        }
        SumiReadModels readModels = requireReadModels();
        Instant now = clock.instant();
        Map<String, Object> consumers = new LinkedHashMap<>();
        readModels.ledgerCounts().forEach((consumer, counts) -> {
            Map<String, Object> entry = new LinkedHashMap<>();
            Map<String, Long> byStatus = new LinkedHashMap<>();
            for (MessageStatus status : MessageStatus.values()) {
                byStatus.put(status.name(), counts.getOrDefault(status.name(), 0L));
            }
            entry.put("counts", byStatus);
            entry.put(
                    "oldestLiveClaim",
                    readModels
                            .oldestLiveClaim(consumer, now)
                            .map(SumiEndpoint::ledgerRow)
                            .orElse(null));
            consumers.put(consumer, entry);
        });
        return Map.of("consumers", consumers);
    }

    /** The ledger as its store reports it: consumers with a live claim or rows held, by name. */
    private Map<String, Object> storeLedger() {
        Map<String, Object> consumers = new java.util.TreeMap<>();
        requireStore().consumerStats().forEach((consumer, stats) -> {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("oldestLiveClaimAge", stats.oldestLiveClaimAge().toString());
            entry.put("heldForReconciliation", stats.heldForReconciliation());
            consumers.put(consumer, entry);
        });
        return Map.of("consumers", consumers);
    }

    private SumiReadModels requireReadModels() {
        if (readModels == null) {
            throw new InvalidEndpointRequestException("This application has no DataSource to list from", "No database");
        }
        return readModels;
    }

    private Map<String, Object> outboxBacklog() {
        requireOutbox();
        Map<String, Object> topics = new LinkedHashMap<>();
        requireReadModels().outboxBacklog().forEach((topic, backlog) -> {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("pending", backlog.pending());
            entry.put("parked", backlog.parked());
            entry.put("oldestDueAt", text(backlog.oldestDueAt()));
            topics.put(topic, entry);
        });
        return Map.of("topics", topics);
    }

    private Map<String, Object> budgets() {
        return budgets != null ? budgets.all() : new LinkedHashMap<>();
    }

    // ----------------------------------------------------------------------------------- writes

    /**
     * One write. Targets and actions:
     * <ul>
     *   <li>{@code claims/release} ({@code consumer}, {@code messageId}): ends a live claim's lease
     *   now, so the next delivery takes the message (its handler may still be running: release
     *   only a claim whose consumer is known to be gone or stuck);</li>
     *   <li>{@code reconciliation/complete} ({@code consumer}, {@code messageId}): the provider
     *   did the effect; the row becomes {@code COMPLETED};</li>
     *   <li>{@code reconciliation/release} ({@code consumer}, {@code messageId}): the provider did
     *   not; the row is deleted, and a replay of the dead letter runs as a new message;</li>
     *   <li>{@code outbox/redrive} ({@code id}, or {@code topic}, or {@code all: true}): parked
     *   rows become pending again, due now, attempts reset;</li>
     *   <li>{@code budgets/force-open}, {@code budgets/force-closed}, {@code budgets/reset-window},
     *   {@code budgets/limit} ({@code name}; {@code limit} for the last): in memory, on this
     *   instance, until the next restart or configuration refresh.</li>
     * </ul>
     */
    @WriteOperation
    public Map<String, Object> write(
            @Selector String target,
            @Selector String action,
            SecurityContext securityContext,
            @Nullable String consumer,
            @Nullable String messageId,
            @Nullable Long id,
            @Nullable String topic,
            @Nullable Boolean all,
            @Nullable String name,
            @Nullable Double limit) {
        String who = who(securityContext);
        String operation = target + "/" + action;
        Map<String, Object> result = switch (operation) {
            case "claims/release" -> releaseClaim(who, require(consumer, "consumer"), require(messageId, "messageId"));
            case "reconciliation/complete" ->
                resolve(true, require(consumer, "consumer"), require(messageId, "messageId"));
            case "reconciliation/release" ->
                resolve(false, require(consumer, "consumer"), require(messageId, "messageId"));
            case "outbox/redrive" -> redrive(id, topic, all);
            case "budgets/force-open", "budgets/force-closed", "budgets/reset-window", "budgets/limit" ->
                budgetWrite(action, name, limit);
            default ->
                throw new InvalidEndpointRequestException(
                        "Unknown write '" + operation + "': use claims/release, reconciliation/complete,"
                                + " reconciliation/release, outbox/redrive, budgets/force-open,"
                                + " budgets/force-closed, budgets/reset-window or budgets/limit",
                        "Unknown write");
        };
        Map<String, Object> what = new LinkedHashMap<>();
        what.put("consumer", consumer);
        what.put("messageId", messageId);
        what.put("id", id);
        what.put("topic", topic);
        what.put("all", all);
        what.put("name", name);
        what.put("limit", limit);
        what.values().removeIf(java.util.Objects::isNull);
        log.warn("Sumi operator action by {}: {} {} -> {}", who, operation, what, result);
        return result;
    }

    private Map<String, Object> releaseClaim(String who, String consumer, String messageId) {
        ProcessedMessageStore ledger = requireStore();
        Optional<ProcessedMessage> row = ledger.find(consumer, messageId);
        if (row.isEmpty()) {
            return unchanged("no ledger row for this consumer and message id");
        }
        if (row.get().status() != MessageStatus.IN_PROGRESS) {
            return unchanged("the row is " + row.get().status() + ", not a claim in progress");
        }
        // Fenced on the claim's token: if the claim changed hands since the read, nothing is released.
        boolean released = ledger.release(row.get(), "released by operator " + who);
        return released ? changed(1) : unchanged("the claim changed hands meanwhile; read it again");
    }

    private Map<String, Object> resolve(boolean completed, String consumer, String messageId) {
        ProcessedMessageStore ledger = requireStore();
        boolean done = completed
                ? ledger.completeReconciled(consumer, messageId)
                : ledger.releaseReconciled(consumer, messageId);
        return done ? changed(1) : unchanged("no row held for reconciliation for this consumer and message id");
    }

    private Map<String, Object> redrive(@Nullable Long id, @Nullable String topic, @Nullable Boolean all) {
        OutboxControl control = requireOutbox();
        int chosen = (id != null ? 1 : 0) + (topic != null ? 1 : 0) + (Boolean.TRUE.equals(all) ? 1 : 0);
        if (chosen != 1) {
            throw new InvalidEndpointRequestException(
                    "outbox/redrive needs exactly one of: id, topic, all=true", "Ambiguous re-drive");
        }
        if (id != null) {
            return control.redrive(id) ? changed(1) : unchanged("row " + id + " is not parked");
        }
        int count = control.redriveParked(topic);
        return count > 0 ? changed(count) : unchanged("no parked rows" + (topic != null ? " of topic " + topic : ""));
    }

    // ---------------------------------------------------------------------------------- helpers

    private static String who(SecurityContext context) {
        Principal principal = context.getPrincipal();
        return principal != null && principal.getName() != null ? principal.getName() : "anonymous";
    }

    private static String require(@Nullable String value, String parameter) {
        if (value == null || value.isBlank()) {
            throw new InvalidEndpointRequestException("Missing " + parameter, "Missing " + parameter);
        }
        return value;
    }

    private ProcessedMessageStore requireStore() {
        if (store == null) {
            throw new InvalidEndpointRequestException("This application has no Sumi ledger", "No ledger");
        }
        return store;
    }

    private OutboxControl requireOutbox() {
        if (outbox == null) {
            throw new InvalidEndpointRequestException(
                    "This application has no Sumi outbox (sumi-outbox-producer)", "No outbox");
        }
        return outbox;
    }

    private Map<String, Object> budgetWrite(String action, @Nullable String name, @Nullable Double limit) {
        String budget = require(name, "name");
        if (budgets == null) {
            throw new InvalidEndpointRequestException("No budget named '" + budget + "'", "Unknown budget");
        }
        return budgets.write(action, budget, limit);
    }

    private static PageRequest pageRequest(@Nullable Integer page, @Nullable Integer size, Sort sort) {
        int number = page == null ? 0 : page;
        int rows = size == null ? DEFAULT_PAGE_SIZE : size;
        if (number < 0 || rows < 1 || rows > MAX_PAGE_SIZE) {
            throw new InvalidEndpointRequestException(
                    "page must be >= 0 and size between 1 and " + MAX_PAGE_SIZE, "Invalid page");
        }
        return PageRequest.of(number, rows, sort);
    }

    private static <T> Map<String, Object> page(Page<T> page, Function<T, Map<String, Object>> row) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("content", page.getContent().stream().map(row).toList());
        result.put("page", page.getNumber());
        result.put("size", page.getSize());
        result.put("totalElements", page.getTotalElements());
        result.put("totalPages", page.getTotalPages());
        return result;
    }

    private static Map<String, Object> ledgerRow(LedgerRow row) {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("consumer", row.id().consumer());
        map.put("messageId", row.id().messageId());
        map.put("status", row.status());
        map.put("firstSeenAt", text(row.firstSeenAt()));
        map.put("leaseUntil", text(row.leaseUntil()));
        map.put("attempts", row.attempts());
        map.put("lastError", row.lastError());
        map.put("processedAt", text(row.processedAt()));
        return map;
    }

    private static Map<String, Object> outboxRow(OutboxRow row) {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("id", row.id());
        map.put("topic", row.topic());
        map.put("aggregateId", row.aggregateId());
        map.put("createdAt", text(row.createdAt()));
        map.put("availableAt", text(row.availableAt()));
        map.put("attempts", row.attempts());
        map.put("lastError", row.lastError());
        map.put("parkedAt", text(row.parkedAt()));
        return map;
    }

    private static @Nullable String text(@Nullable Instant instant) {
        return instant == null ? null : instant.toString();
    }

    static Map<String, Object> changed(int rows) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("changed", true);
        result.put("rows", rows);
        return result;
    }

    static Map<String, Object> unchanged(String reason) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("changed", false);
        result.put("reason", reason);
        return result;
    }
}
