package io.sumi.test;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches in a {@code @SpringBootTest} context (Spring Boot marks its environment), unless
 * {@code sumi.test.enabled=false}; {@code sumi.test.enabled=true} makes it match in any context.
 * The kit's jar being on the classpath is not enough: an application that ships part of the kit
 * at run time (the charge example's demo uses {@code CrashInjector}) must not record deliveries
 * in memory for as long as it runs.
 */
final class OnSpringBootTestCondition extends SpringBootCondition {

    /** The property {@code SpringBootTestContextBootstrapper} sets in the environment of a {@code @SpringBootTest}. */
    static final String SPRING_BOOT_TEST_MARKER =
            "org.springframework.boot.test.context.SpringBootTestContextBootstrapper";

    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        Environment environment = context.getEnvironment();
        String enabled = environment.getProperty("sumi.test.enabled");
        if (enabled != null) {
            return Boolean.parseBoolean(enabled.trim())
                    ? ConditionOutcome.match("sumi.test.enabled is true")
                    : ConditionOutcome.noMatch("sumi.test.enabled is false");
        }
        return "true".equals(environment.getProperty(SPRING_BOOT_TEST_MARKER))
                ? ConditionOutcome.match("a @SpringBootTest context")
                : ConditionOutcome.noMatch(
                        "not a @SpringBootTest context (set sumi.test.enabled=true to force the kit)");
    }
}
