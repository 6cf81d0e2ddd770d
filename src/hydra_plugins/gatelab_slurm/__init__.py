"""gatelab's SLURM launcher (``hydra/launcher=cluster``). Hydra takes launchers only from the
``hydra_plugins`` namespace, so the class lives here; the checks it adds are in
:mod:`gatelab.launch.slurm`, the waves in :func:`gatelab.launch.plan.waves`."""
try:
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as _SubmititSlurm
except ImportError:  # hydra-submitit-launcher absent: `pip install -e '.[cluster]'`
    _SubmititSlurm = None

if _SubmititSlurm is not None:
    class SlurmLauncher(_SubmititSlurm):
        """hydra-submitit-launcher's SLURM launcher (its job: the Hydra run, checkpointable), which first checks
        that some node of the partition can hold one job as requested (:func:`gatelab.launch.slurm.check_request`),
        submits the sweep in waves through submitit's public executor, one job array a wave
        (``slurm_array_parallelism`` at once), a job's prerequisites (an FLNPF source, an earlier IMP round) in an
        earlier wave than the job, and follows the jobs itself (:func:`gatelab.launch.slurm.wait_for`): a job that
        ends without a result is reported instead of stopping the sweep, on clusters without accounting too."""

        def launch(self, job_overrides, initial_job_idx):
            from gatelab.launch.plan import waves
            from gatelab.launch.slurm import check_request, cluster_nodes, log, signal_window, wait_for

            check_request(self.params, cluster_nodes(self.params.get("partition")))
            warning = signal_window(self.params)
            if warning:
                log.warning(warning)
            loader = self.hydra_context.config_loader
            stages = waves([list(o) for o in job_overrides], lambda o: loader.load_sweep_config(self.config, o))
            returns = []
            for stage in stages:
                returns += wait_for(self._array(stage, initial_job_idx + len(returns)), str(self.config.out_root))
            return returns

        def _array(self, overrides, first: int) -> list:
            """One wave as a job array of submitit's executor (``map_array``), each task this launcher's
            ``__call__`` on its overrides, as hydra-submitit-launcher submits them."""
            from pathlib import Path

            import submitit
            from hydra.core.singleton import Singleton
            from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
            from omegaconf import OmegaConf

            params = dict(self.params)
            executor = submitit.AutoExecutor(folder=params.pop("submitit_folder"), cluster="slurm",
                                             slurm_max_num_timeout=params.pop("max_num_timeout"))
            base = set(OmegaConf.structured(BaseQueueConf).keys())
            executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items()})
            Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
            calls = [(list(o), "hydra.sweep.dir", first + i, f"job_id_for_{first + i}", Singleton.get_state())
                     for i, o in enumerate(overrides)]
            return executor.map_array(self, *zip(*calls))
