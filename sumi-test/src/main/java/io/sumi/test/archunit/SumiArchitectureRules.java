package io.sumi.test.archunit;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.methods;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaAnnotation;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaEnumConstant;
import com.tngtech.archunit.core.domain.JavaMethod;
import com.tngtech.archunit.core.domain.JavaMethodCall;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.domain.JavaType;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.CompositeArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * ArchUnit rules for an application that uses Sumi. Check them in a plain JUnit test:
 *
 * <pre>{@code
 * @Test
 * void sumiRules() {
 *     JavaClasses classes = new ClassFileImporter()
 *             .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
 *             .importPackages("com.example.shop");
 *     SumiArchitectureRules.all().check(classes);
 * }
 * }</pre>
 *
 * Each rule names the method and says why in its failure message. The rules read annotations and
 * calls from the bytecode, so they work with any JUnit engine (no ArchUnit engine needed).
 */
public final class SumiArchitectureRules {

    /** Sumi's outbox append. */
    static final String OUTBOX = "io.sumi.outbox.Outbox";

    static final String IDEMPOTENT_HANDLER = "io.sumi.consumer.IdempotentHandler";
    static final String TRANSACTIONAL = "org.springframework.transaction.annotation.Transactional";
    static final String JAKARTA_TRANSACTIONAL = "jakarta.transaction.Transactional";
    static final String BEAN = "org.springframework.context.annotation.Bean";

    /** A {@code @Transactional} label that starts with this states why a lease-mode handler is transactional. */
    public static final String LEASE_TRANSACTION_REASON_LABEL = "sumi:lease-reason:";

    /**
     * Clients that reach outside the database: HTTP, mail, brokers. The types and their nested
     * types (a {@code RestClient}'s request specs), and their subtypes.
     */
    public static final List<String> EXTERNAL_CLIENTS = List.of(
            "org.springframework.web.client.RestClient",
            "org.springframework.web.client.RestOperations",
            "org.springframework.web.client.RestTemplate",
            "org.springframework.web.reactive.function.client.WebClient",
            "org.springframework.web.service.invoker.HttpServiceProxyFactory",
            "java.net.http.HttpClient",
            "java.net.HttpURLConnection",
            "java.net.URLConnection",
            "org.apache.hc.client5.http.classic.HttpClient",
            "org.apache.http.client.HttpClient",
            "okhttp3.OkHttpClient",
            "okhttp3.Call",
            "org.springframework.mail.MailSender",
            "jakarta.mail.Transport",
            "javax.mail.Transport",
            "org.springframework.kafka.core.KafkaOperations",
            "org.springframework.kafka.core.KafkaTemplate",
            "org.apache.kafka.clients.producer.Producer",
            "org.springframework.cloud.stream.function.StreamBridge",
            "org.springframework.amqp.core.AmqpTemplate",
            "org.springframework.amqp.rabbit.core.RabbitOperations",
            "org.springframework.jms.core.JmsOperations");

    /** The listener annotations whose methods Sumi's binders guard. */
    public static final List<String> KAFKA_LISTENER_ANNOTATIONS = List.of(
            "org.springframework.kafka.annotation.KafkaListener",
            "org.springframework.kafka.annotation.KafkaListeners",
            "org.springframework.kafka.annotation.KafkaHandler");

    /** Parameter types from which Sumi's Kafka binder takes the message of a method that is not a listener. */
    static final List<String> MESSAGE_PARAMETERS = List.of(
            "org.apache.kafka.clients.consumer.ConsumerRecord",
            "org.apache.kafka.clients.consumer.ConsumerRecords",
            "org.springframework.messaging.Message",
            "java.util.List");

    private SumiArchitectureRules() {}

    /** Every rule of this class. */
    public static ArchRule all() {
        return CompositeArchRule.of(outboxWritersDoNotCallExternalSystems())
                .and(idempotentHandlersAreOnMethodsSumiGuards())
                .and(leaseModeHandlersAreNotTransactionalWithoutAReason())
                .and(noDependencyOnSumiInternals());
    }

    /**
     * A method that appends to Sumi's outbox, and a {@code @Transactional} method whose
     * transaction appends (itself or through methods of its own class), does not call an HTTP
     * client, a mail sender or a broker template itself ({@link #EXTERNAL_CLIENTS}). The outbox
     * exists so that the effect happens after the commit, once, in a consumer: a call made in the
     * appending transaction happens even when it rolls back, and again on every retry.
     */
    public static ArchRule outboxWritersDoNotCallExternalSystems() {
        return methods()
                .should(
                        new ArchCondition<JavaMethod>("not call an HTTP client, mail sender or broker template in a"
                                + " transaction that appends to the outbox") {
                            @Override
                            public void check(JavaMethod method, ConditionEvents events) {
                                boolean appendsItself = callsOutbox(method);
                                boolean transactional = isTransactional(method);
                                if (!appendsItself && !transactional) {
                                    return;
                                }
                                Set<JavaMethod> reach = transactional ? sameClassReach(method) : Set.of(method);
                                if (!appendsItself && reach.stream().noneMatch(SumiArchitectureRules::callsOutbox)) {
                                    return;
                                }
                                for (JavaMethod reached : reach) {
                                    for (JavaMethodCall call : reached.getMethodCallsFromSelf()) {
                                        String client = externalClient(call.getTargetOwner());
                                        if (client != null) {
                                            events.add(SimpleConditionEvent.violated(
                                                    method,
                                                    method.getFullName() + " appends to Sumi's outbox"
                                                            + (transactional && !appendsItself
                                                                    ? " in its transaction"
                                                                    : "")
                                                            + " and calls " + client + " (" + call.getDescription()
                                                            + "): make that call in the outbox's consumer instead,"
                                                            + " after the commit"));
                                        }
                                    }
                                }
                            }
                        })
                .allowEmptyShould(true);
    }

    /**
     * {@code @IdempotentHandler} is only where a Sumi binder applies it: on a
     * {@code @KafkaListener} / {@code @KafkaHandler} method (or one of {@code extraListeners}, for
     * binders added later), on a {@code @Bean} method returning a {@code Consumer} or
     * {@code Function} (a Spring Cloud Stream function), or on a method that takes its message as a
     * parameter ({@code ConsumerRecord}, {@code Message}, a list of records), called through the
     * bean. Never on a private, static or final method, which Spring's proxy cannot advise: there
     * the annotation would be silently ignored and every duplicate processed.
     */
    public static ArchRule idempotentHandlersAreOnMethodsSumiGuards(String... extraListeners) {
        List<String> listeners = new ArrayList<>(KAFKA_LISTENER_ANNOTATIONS);
        listeners.addAll(List.of(extraListeners));
        return methods()
                .that(annotatedWith(IDEMPOTENT_HANDLER))
                .should(new ArchCondition<JavaMethod>("be a method a Sumi binder guards") {
                    @Override
                    public void check(JavaMethod method, ConditionEvents events) {
                        String problem = guardProblem(method, listeners);
                        if (problem != null) {
                            events.add(SimpleConditionEvent.violated(
                                    method, "@IdempotentHandler on " + method.getFullName() + " " + problem));
                        }
                    }
                })
                .allowEmptyShould(true);
    }

    /**
     * An {@code @IdempotentHandler(mode = LEASE)} method is not {@code @Transactional} (on the
     * method or its class) unless the transaction's label states why
     * ({@code @Transactional(label = "sumi:lease-reason: ...")}). Lease mode is for effects outside
     * the database: a transaction around them holds a connection across the remote call, and a
     * commit that fails after the call makes the redelivery call again. Effects in the database
     * want transactional mode (leave the mode at {@code AUTO} or say {@code TRANSACTIONAL}).
     */
    public static ArchRule leaseModeHandlersAreNotTransactionalWithoutAReason() {
        return methods()
                .that(annotatedWith(IDEMPOTENT_HANDLER))
                .should(new ArchCondition<JavaMethod>("not be @Transactional in lease mode without a stated reason") {
                    @Override
                    public void check(JavaMethod method, ConditionEvents events) {
                        if (!leaseMode(method)) {
                            return;
                        }
                        Optional<JavaAnnotation<?>> transactional = transactionalAnnotation(method);
                        if (transactional.isPresent() && !hasReason(transactional.get())) {
                            events.add(SimpleConditionEvent.violated(
                                    method,
                                    method.getFullName() + " is a lease-mode @IdempotentHandler and @Transactional:"
                                            + " use mode TRANSACTIONAL for effects in the database, drop the"
                                            + " transaction, or state why with @Transactional(label = \""
                                            + LEASE_TRANSACTION_REASON_LABEL + " ...\")"));
                        }
                    }
                })
                .allowEmptyShould(true);
    }

    /**
     * Code outside Sumi does not use Sumi's {@code ..internal..} packages: they change without
     * notice; the public API is at each package root.
     */
    public static ArchRule noDependencyOnSumiInternals() {
        return noClasses()
                .that()
                .resideOutsideOfPackage("io.sumi..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage("io.sumi..internal..")
                .because("Sumi's internal packages are not an API; use the types at the package roots")
                .allowEmptyShould(true);
    }

    // ---------------------------------------------------------------- helpers

    private static DescribedPredicate<JavaMethod> annotatedWith(String annotation) {
        return DescribedPredicate.describe(
                "annotated with @" + annotation.substring(annotation.lastIndexOf('.') + 1),
                method -> method.isAnnotatedWith(annotation) || method.isMetaAnnotatedWith(annotation));
    }

    static boolean callsOutbox(JavaMethod method) {
        for (JavaMethodCall call : method.getMethodCallsFromSelf()) {
            JavaClass owner = call.getTargetOwner();
            if ((owner.getName().equals(OUTBOX) || owner.isAssignableTo(OUTBOX))
                    && call.getName().equals("append")) {
                return true;
            }
        }
        return false;
    }

    /** The method and the methods of its own class it calls, transitively (a transaction spans them). */
    private static Set<JavaMethod> sameClassReach(JavaMethod method) {
        Set<JavaMethod> reach = new LinkedHashSet<>();
        Deque<JavaMethod> todo = new ArrayDeque<>();
        todo.add(method);
        while (!todo.isEmpty()) {
            JavaMethod next = todo.poll();
            if (!reach.add(next)) {
                continue;
            }
            for (JavaMethodCall call : next.getMethodCallsFromSelf()) {
                if (call.getTargetOwner().equals(method.getOwner())) {
                    call.getTarget().resolveMember().ifPresent(todo::add);
                }
            }
        }
        return reach;
    }

    private static @Nullable String externalClient(JavaClass owner) {
        for (String client : EXTERNAL_CLIENTS) {
            if (owner.getName().equals(client)
                    || owner.getName().startsWith(client + "$")
                    || owner.isAssignableTo(client)) {
                return client.substring(client.lastIndexOf('.') + 1);
            }
        }
        return null;
    }

    private static boolean isTransactional(JavaMethod method) {
        return transactionalAnnotation(method).isPresent();
    }

    private static Optional<JavaAnnotation<?>> transactionalAnnotation(JavaMethod method) {
        for (String name : List.of(TRANSACTIONAL, JAKARTA_TRANSACTIONAL)) {
            Optional<? extends JavaAnnotation<?>> onMethod = method.tryGetAnnotationOfType(name);
            if (onMethod.isPresent()) {
                return Optional.of(onMethod.get());
            }
            Optional<? extends JavaAnnotation<?>> onClass = method.getOwner().tryGetAnnotationOfType(name);
            if (onClass.isPresent()) {
                return Optional.of(onClass.get());
            }
        }
        return Optional.empty();
    }

    private static boolean hasReason(JavaAnnotation<?> transactional) {
        Optional<Object> label = transactional.get("label");
        if (label.isPresent() && label.get() instanceof Object[] labels) {
            for (Object value : labels) {
                if (String.valueOf(value).startsWith(LEASE_TRANSACTION_REASON_LABEL)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static boolean leaseMode(JavaMethod method) {
        Optional<? extends JavaAnnotation<?>> handler = method.tryGetAnnotationOfType(IDEMPOTENT_HANDLER);
        if (handler.isEmpty()) {
            return false;
        }
        Optional<Object> mode = handler.get().get("mode");
        return mode.isPresent()
                && mode.get() instanceof JavaEnumConstant constant
                && constant.name().equals("LEASE");
    }

    private static @Nullable String guardProblem(JavaMethod method, List<String> listeners) {
        Set<JavaModifier> modifiers = method.getModifiers();
        boolean bean = method.isAnnotatedWith(BEAN) || method.isMetaAnnotatedWith(BEAN);
        if (bean) {
            JavaClass returned = method.getRawReturnType();
            if (returned.isAssignableTo("java.util.function.Consumer")
                    || returned.isAssignableTo("java.util.function.Function")) {
                return null;
            }
            return "marks a @Bean of type " + returned.getSimpleName() + ": Sumi's Spring Cloud Stream binder guards"
                    + " Consumer and Function beans only (not Supplier, BiFunction or BiConsumer)";
        }
        if (modifiers.contains(JavaModifier.PRIVATE)
                || modifiers.contains(JavaModifier.STATIC)
                || modifiers.contains(JavaModifier.FINAL)
                || method.getOwner().getModifiers().contains(JavaModifier.FINAL)) {
            return "is on a private, static or final method (or a final class): Spring's proxy cannot advise it, so"
                    + " the annotation would be ignored and every duplicate processed";
        }
        for (String listener : listeners) {
            if (method.isAnnotatedWith(listener) || method.isMetaAnnotatedWith(listener)) {
                return null;
            }
        }
        for (JavaType parameter : method.getParameterTypes()) {
            String name = parameter.toErasure().getName();
            if (MESSAGE_PARAMETERS.contains(name)) {
                return null;
            }
        }
        return "is neither on a listener method ("
                + String.join(
                        ", ",
                        listeners.stream()
                                .map(name -> "@" + name.substring(name.lastIndexOf('.') + 1))
                                .toList())
                + "), nor on a Stream function @Bean, nor on a method with a ConsumerRecord, Message or List parameter:"
                + " no Sumi binder can tell which message it guards";
    }
}
