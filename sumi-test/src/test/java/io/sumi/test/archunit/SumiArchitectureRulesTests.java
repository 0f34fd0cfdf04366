package io.sumi.test.archunit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.example.sumifixtures.clean.GuardedHandlers;
import com.example.sumifixtures.clean.PlaceOrder;
import com.example.sumifixtures.extra.OwnBinderHandler;
import com.example.sumifixtures.extra.OwnListener;
import com.example.sumifixtures.violating.MisplacedHandlers;
import com.example.sumifixtures.violating.PlaceOrderAndCallPartner;
import com.example.sumifixtures.violating.TransactionalLeaseHandler;
import com.example.sumifixtures.violating.UsesSumiInternals;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import org.junit.jupiter.api.Test;

/** Each rule catches its violating fixture (naming the method) and passes the clean ones. */
class SumiArchitectureRulesTests {

    static final JavaClasses CLEAN = new ClassFileImporter().importClasses(PlaceOrder.class, GuardedHandlers.class);

    static EvaluationResult evaluate(ArchRule rule, Class<?>... classes) {
        return rule.evaluate(new ClassFileImporter().importClasses(classes));
    }

    @Test
    void outboxWritersThatCallExternalSystemsAreCaught() {
        EvaluationResult result =
                evaluate(SumiArchitectureRules.outboxWritersDoNotCallExternalSystems(), PlaceOrderAndCallPartner.class);

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .hasSize(2)
                .anySatisfy(line -> assertThat(line)
                        .contains("placeOrder(java.lang.String)")
                        .contains("HttpClient"))
                .anySatisfy(line -> assertThat(line)
                        .contains("placeOrderAndNotify")
                        .contains("in its transaction")
                        .contains("KafkaTemplate"));
        assertThat(SumiArchitectureRules.outboxWritersDoNotCallExternalSystems()
                        .evaluate(CLEAN)
                        .hasViolation())
                .isFalse();
    }

    @Test
    void idempotentHandlersWhereNoBinderAppliesThemAreCaught() {
        EvaluationResult result =
                evaluate(SumiArchitectureRules.idempotentHandlersAreOnMethodsSumiGuards(), MisplacedHandlers.class);

        assertThat(result.getFailureReport().getDetails())
                .hasSize(3)
                .anySatisfy(line -> assertThat(line).contains("sendMail").contains("neither on a listener method"))
                .anySatisfy(line -> assertThat(line).contains("onPrivate").contains("private, static or final"))
                .anySatisfy(line -> assertThat(line).contains("ticks").contains("Supplier"));
        assertThat(SumiArchitectureRules.idempotentHandlersAreOnMethodsSumiGuards()
                        .evaluate(CLEAN)
                        .hasViolation())
                .isFalse();
    }

    @Test
    void anotherBindersListenerIsAcceptedOnceNamed() {
        assertThat(evaluate(SumiArchitectureRules.idempotentHandlersAreOnMethodsSumiGuards(), OwnBinderHandler.class)
                        .hasViolation())
                .isTrue();
        assertThat(evaluate(
                                SumiArchitectureRules.idempotentHandlersAreOnMethodsSumiGuards(
                                        OwnListener.class.getName()),
                                OwnBinderHandler.class)
                        .hasViolation())
                .isFalse();
    }

    @Test
    void transactionalLeaseHandlersWithoutAReasonAreCaught() {
        EvaluationResult result = evaluate(
                SumiArchitectureRules.leaseModeHandlersAreNotTransactionalWithoutAReason(),
                TransactionalLeaseHandler.class);

        assertThat(result.getFailureReport().getDetails())
                .singleElement()
                .asString()
                .contains("charge")
                .contains("lease-mode")
                .contains(SumiArchitectureRules.LEASE_TRANSACTION_REASON_LABEL);
        assertThat(SumiArchitectureRules.leaseModeHandlersAreNotTransactionalWithoutAReason()
                        .evaluate(CLEAN)
                        .hasViolation())
                .isFalse();
    }

    @Test
    void dependenciesOnSumiInternalsAreCaught() {
        EvaluationResult result =
                evaluate(SumiArchitectureRules.noDependencyOnSumiInternals(), UsesSumiInternals.class);

        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().toString())
                .contains("UsesSumiInternals")
                .contains("DeadLetterReader");
        assertThat(SumiArchitectureRules.noDependencyOnSumiInternals()
                        .evaluate(CLEAN)
                        .hasViolation())
                .isFalse();
    }

    @Test
    void allRulesTogetherFailOnTheViolatingPackageAndPassOnTheCleanOne() {
        JavaClasses violating = new ClassFileImporter().importPackages("com.example.sumifixtures.violating");

        assertThatThrownBy(() -> SumiArchitectureRules.all().check(violating))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("PlaceOrderAndCallPartner")
                .hasMessageContaining("MisplacedHandlers")
                .hasMessageContaining("TransactionalLeaseHandler")
                .hasMessageContaining("UsesSumiInternals");
        SumiArchitectureRules.all().check(new ClassFileImporter().importPackages("com.example.sumifixtures.clean"));
    }
}
