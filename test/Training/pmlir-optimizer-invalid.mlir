// pmlir-optimizer refuses hyper-parameters that make AdamW's update
// undefined or meaningless, naming the option and its range: eps = 0
// divides 0 by 0 wherever a gradient is 0 (a NaN parameter saved with
// exit 0 before), a negative or infinite rate, decay or clipping norm, a
// beta outside [0, 1).
// RUN: pmlir-gen gpt2 --layers 1 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 4 --loss \
// RUN:   | pmlir-opt --pmlir-autodiff -o %t.grad.mlir
// RUN: not pmlir-opt %t.grad.mlir --pmlir-optimizer="eps=0" 2>&1 | FileCheck %s --check-prefix=EPS
// EPS: error: pmlir-optimizer: eps must be a finite value > 0 (the update divides by sqrt(v) + eps, and v is 0 where a gradient is), got 0.000000e+00
// RUN: not pmlir-opt %t.grad.mlir --pmlir-optimizer="lr=-1" 2>&1 | FileCheck %s --check-prefix=LR
// LR: error: pmlir-optimizer: lr must be a finite value >= 0, got -1.000000e+00
// RUN: not pmlir-opt %t.grad.mlir --pmlir-optimizer="max-grad-norm=inf" 2>&1 | FileCheck %s --check-prefix=CLIP
// CLIP: error: pmlir-optimizer: max-grad-norm must be a finite value >= 0, got INF
// RUN: not pmlir-opt %t.grad.mlir --pmlir-optimizer="beta2=1" 2>&1 | FileCheck %s --check-prefix=BETA
// BETA: error: pmlir-optimizer: beta2 must be in [0, 1), got 1.000000e+00
// An empty name made a function no parser reads back (@<<INVALID EMPTY
// SYMBOL>>), with exit 0.
// RUN: not pmlir-opt %t.grad.mlir --pmlir-optimizer="name=" 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: error: 'func.func' op cannot make a training step without a name (name is empty)
// The same through pmlir-run's flags, named as pmlir-run's, before
// anything compiles: nothing is saved.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 4 --loss -o %t.model.mlir
// RUN: %python -c "import struct,json,sys; ids=[1,2,3,4]; h=json.dumps({'input_ids':{'dtype':'I64','shape':[1,4],'data_offsets':[0,32]},'labels':{'dtype':'I64','shape':[1,4],'data_offsets':[32,64]}}).encode(); h+=b' '*(-len(h)%%8); open(sys.argv[1],'wb').write(struct.pack('<Q',len(h))+h+struct.pack('<4q',*ids)*2)" %t.batch.safetensors
// RUN: rm -f %t.saved.safetensors
// RUN: not pmlir-run %t.model.mlir --train --inputs %t.batch.safetensors --eps 0 --save %t.saved.safetensors 2>&1 | FileCheck %s --check-prefix=RUN-EPS
// RUN: not test -e %t.saved.safetensors
// RUN-EPS: pmlir-run: error: --eps must be a finite value > 0 (the update divides by sqrt(v) + eps, and v is 0 where a gradient is), got 0.000000e+00
// RUN: not pmlir-run %t.model.mlir --train --inputs %t.batch.safetensors --clip-grad-norm -1 2>&1 | FileCheck %s --check-prefix=RUN-CLIP
// RUN-CLIP: pmlir-run: error: --clip-grad-norm must be a finite value >= 0, got -1.000000e+00
// RUN: not pmlir-run %t.model.mlir --train --inputs %t.batch.safetensors --betas 0.9,1 2>&1 | FileCheck %s --check-prefix=RUN-BETA
// RUN-BETA: pmlir-run: error: --betas' beta2 must be in [0, 1), got 1.000000e+00
